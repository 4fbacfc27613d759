#!/usr/bin/env python3
"""Deterministic generator for the benchmark fixture data under `data/`: the assembly and the entry point.

Writes, next to itself (so a run cannot overwrite `data/`; `cmp` the results against it):
  workload_37x21.jsonl   37 decision requests, 21 questions each (15 noul + 6 choice)
  bench_single_state.json one request with a ~1,500-token state and 21 noul questions

Each domain's texts and questions are drawn in its own module of `domains/` (`domains.pieces`: what they share);
this file picks the domain, seed and questions of each request. Standard library only; fixed seed, so re-running
reproduces the files byte for byte.
Usage:  python tools/provenance/make_workload.py
"""
import json
import os
import random

from domains.code_review import code_review
from domains.contracts import contract
from domains.hr_cases import hr_case
from domains.incidents import incident
from domains.insurance import insurance
from domains.medical_admin import medical_admin
from domains.procurement import procurement
from domains.security_alerts import security_alert
from domains.support import support_chat

SEED = 37021
HERE = os.path.dirname(os.path.abspath(__file__))

DOMAINS = [
    ("support_conversation", support_chat),
    ("incident_postmortem", incident),
    ("insurance_claim", insurance),
    ("code_review", code_review),
    ("hr_policy_case", hr_case),
    ("contract_clauses", contract),
    ("medical_admin_triage", medical_admin),
    ("procurement_request", procurement),
    ("security_alert", security_alert),
]
N_STATES = 37
N_NOUL = 15
N_CHOICE = 6


def build_request(rid, domain, fn, seed):
    r = random.Random(seed)
    state, noul, choice = fn(r)
    q_noul = r.sample(sorted(noul), N_NOUL)
    q_choice = r.sample(sorted(choice), N_CHOICE)
    order = q_noul + q_choice
    r.shuffle(order)
    questions = {}
    for qid in order:
        questions[qid] = noul[qid] if qid in noul else choice[qid]
    return {"id": rid, "group_id": rid, "domain": domain, "state": state, "questions": questions}


def build_workload():
    out = []
    for i in range(N_STATES):
        domain, fn = DOMAINS[i % len(DOMAINS)]
        rid = f"s{i + 1:02d}"
        out.append(build_request(rid, domain, fn, SEED * 100 + i))
    return out


def build_single():
    r = random.Random(SEED + 1)
    state, noul, _ = incident(r)
    qids = r.sample(sorted(noul), 21)
    return {"id": "single", "group_id": "single", "domain": "incident_postmortem", "state": state,
            "questions": {q: noul[q] for q in qids}}


def main():
    reqs = build_workload()
    with open(os.path.join(HERE, "workload_37x21.jsonl"), "w", encoding="utf-8") as fh:
        for req in reqs:
            fh.write(json.dumps(req, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "bench_single_state.json"), "w", encoding="utf-8") as fh:
        json.dump(build_single(), fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    print(f"wrote {len(reqs)} requests and 1 single-state request to {HERE}")


if __name__ == "__main__":
    main()
