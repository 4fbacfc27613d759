"""Domain 2: incident postmortems."""

from .pieces import C, N, WEEKDAYS, date, fill, person, yn

SERVICES = [("checkout-api", "payments"), ("search-indexer", "discovery"), ("auth-gateway", "identity"),
            ("notifications-worker", "messaging"), ("ledger-service", "finance platform"),
            ("media-transcoder", "video"), ("inventory-sync", "fulfilment"), ("graphql-edge", "web platform")]
ROOT_CAUSES = {
    "config_change": "A configuration change to the {comp} set {param} from {old} to {new}, which was applied to all hosts at once instead of through the staged rollout.",
    "bad_deploy": "Release {ver} of {svc} contained a change to the {comp} that held a lock across a network call; under production traffic this exhausted the worker pool.",
    "capacity": "Traffic from a {event} rose to {mult}x the normal peak. {Comp} could not scale beyond its configured maximum of {maxn} instances and requests queued until they timed out.",
    "third_party": "Our {vendor} provider degraded in the region. Calls from the {comp} to the vendor timed out after 30 seconds each and retries multiplied the load.",
    "hardware": "A top-of-rack switch in rack {rack} began dropping packets intermittently. Hosts running the {comp} behind that switch failed health checks in a flapping pattern.",
}
ACTION_TYPES = {
    "add_monitoring": "Add an alert on {metric} with a threshold tied to the SLO burn rate",
    "add_tests": "Add an integration test that exercises the {comp} under production-like concurrency",
    "capacity_increase": "Raise the autoscaling ceiling for the {comp} and load-test to 3x peak",
    "process_change": "Require two-person review and staged rollout for changes to the {comp}",
    "vendor_escalation": "Open a formal escalation with the vendor and review contractual SLA credits",
}
LOG_MSGS = [
    "WARN  {svc} p99 latency {lat}ms exceeds threshold 800ms",
    "ERROR {svc} upstream connect error or disconnect/reset before headers (retry {n}/3)",
    "INFO  autoscaler {svc} desired={d} current={c}",
    "ERROR {svc} pool exhausted: 0 idle of {d} connections, {n} waiters",
    "WARN  lb-health {svc} target {ip} marked unhealthy (3 consecutive failures)",
    "INFO  deploy-bot promoted {svc} build {ver} to 100%",
    "ERROR {svc} request timed out after 30000ms path=/v2/{path}",
    "WARN  kafka consumer lag for {svc} at {lag} messages",
    "INFO  {svc} GC pause {n}00ms heap={d}%",
    "ERROR {svc} 5xx rate {pct}% over last 60s",
]


def incident(r, single=False):
    svc, team = r.choice(SERVICES)
    sev = r.choice(["sev1", "sev2", "sev3"])
    cause = r.choice(list(ROOT_CAUSES))
    detection = r.choice(["monitoring", "customer_report", "internal_user"])
    scope = r.choice(["single_region", "multi_region", "global"])
    dur = r.choice([r.randint(12, 29), r.randint(35, 115), r.randint(130, 400)])
    dur_bucket = "under_30m" if dur < 30 else ("30m_to_2h" if dur <= 120 else "over_2h")
    primary = r.choice(list(ACTION_TYPES))
    f = {k: r.random() < 0.5 for k in ["customer_facing", "data_loss", "rollback", "sla", "status_page", "page_fast",
                                           "recurrence", "flag", "db", "exec", "confirmed", "manual_fix", "noise",
                                           "test_gap", "credits", "followup", "owners"]}
    if cause in ("third_party", "hardware"):
        f["rollback"] = False
    if cause == "bad_deploy":
        f["rollback"] = True
    if not f["customer_facing"]:
        f["status_page"] = f["credits"] = f["sla"] = False
    if f["credits"]:
        f["sla"] = True
    day = r.choice(WEEKDAYS)
    hh = r.randint(0, 23)
    mm = r.randint(0, 59)
    comp = r.choice(["connection pool", "rate limiter", "cache client", "session store", "message consumer", "DNS resolver config"])
    ver = f"{r.randint(3, 9)}.{r.randint(0, 40)}.{r.randint(0, 9)}"
    regions = {"single_region": [r.choice(["us-east-1", "eu-west-1", "ap-southeast-2"])],
               "multi_region": ["us-east-1", "eu-west-1"], "global": ["all production regions"]}[scope]
    ic = person(r)
    oncall = person(r)
    ctx = dict(comp=comp, Comp=comp[0].upper() + comp[1:], svc=svc, ver=ver, param=r.choice(["max_connections", "request_timeout_ms", "cache_ttl_seconds"]),
               old=r.choice([200, 3000, 600]), new=r.choice([20, 300, 6]), event=r.choice(["marketing email blast", "TV segment", "partner launch"]),
               mult=r.randint(3, 9), maxn=r.choice([24, 40, 64]), vendor=r.choice(["SMS delivery", "fraud-scoring", "geolocation", "object storage"]),
               rack=f"{r.choice('ABCDEF')}{r.randint(10, 48)}", metric=r.choice(["pool saturation", "queue depth", "vendor timeout rate", "error budget burn"]))
    title = f"Postmortem: {svc} degradation ({sev.upper()}) — {date(r)}"
    summary = (f"Summary\nOn {day} at {hh:02d}:{mm:02d} UTC, {svc} (owned by the {team} team) began returning elevated errors. "
               f"The incident lasted {dur} minutes from first alert to full recovery and affected {', '.join(regions)}. "
               f"Incident commander: {ic}. Primary on-call: {oncall}. "
               + yn(f["customer_facing"], f"Customers saw failed requests and error pages; roughly {r.randint(2, 38)}% of requests in the affected window returned 5xx. ",
                    "Impact was limited to internal batch jobs and dashboards; no customer-facing requests failed and external users were not affected, so the public status page was left unchanged. ")
               + yn(f["data_loss"], f"Approximately {r.randint(120, 9000):,} records written during the window could not be recovered and are permanently lost. ",
                    "No data was lost; all delayed writes were replayed from the queue once the service recovered. "))
    det_txt = {"monitoring": "The first signal was an automated alert from our monitoring on error rate.",
               "customer_report": f"The first signal was a customer report: a support ticket escalated by {person(r)} in customer care, {r.randint(6, 25)} minutes before any alert fired.",
               "internal_user": f"The first signal was an internal user, {person(r)} from the {r.choice(['sales', 'finance', 'design'])} team, posting in #help-prod that pages were failing."}[detection]
    rc = ROOT_CAUSES[cause].format(**ctx)
    rc_txt = (f"Root cause\n{rc} " + yn(f["confirmed"], "The root cause has been confirmed by reproducing the failure in staging.",
                                          "This root cause is still suspected rather than confirmed; we have not yet been able to reproduce it.")
              + " " + yn(f["db"], f"The primary database cluster (pg-{team.split()[0]}-main) was directly involved: connection slots were exhausted and replicas lagged by up to {r.randint(40, 600)} seconds.",
                         "No database component was involved; the datastore metrics stayed flat throughout.")
              + " " + yn(f["test_gap"], "A contributing factor was a missing test: no staging check covered this code path under concurrent load.",
                         "Test coverage for the affected path was reviewed and found adequate; the failure was not something a pre-release test would reasonably have caught."))
    # timeline
    t = hh * 60 + mm
    tl = []

    def at(delta, msg):
        nonlocal t
        t += delta
        tl.append(f"{(t // 60) % 24:02d}:{t % 60:02d}  {msg}")

    at(0, "First alert: error rate above 2% for " + svc if detection == "monitoring" else "Error rate starts climbing (no alert yet)")
    at(r.randint(1, 3) if f["page_fast"] else r.randint(9, 22), f"{oncall} paged" + ("" if f["page_fast"] else " (page delayed: escalation policy pointed at an outdated rotation)"))
    if f["noise"]:
        at(r.randint(1, 4), "Alert acknowledged but initially dismissed as noise; this alert had fired and self-resolved 14 times in the prior week")
    at(r.randint(2, 6), f"Incident declared {sev.upper()}, {ic} takes IC role, channel #inc-{svc}-{r.randint(100, 999)} opened")
    if f["status_page"]:
        at(r.randint(2, 9), "Public status page updated: 'We are investigating elevated error rates'")
    if f["exec"]:
        at(r.randint(3, 10), f"VP Engineering and the {r.choice(['CTO', 'COO', 'Head of Support'])} notified via the exec incident channel")
    if f["flag"]:
        at(r.randint(3, 10), f"Feature flag '{r.choice(['new-pricing-path', 'async-writes', 'v2-ranking', 'batch-dedupe'])}' turned off to shed load")
    if f["rollback"]:
        at(r.randint(4, 15), f"Rollback started to previous {'release' if cause == 'bad_deploy' else 'configuration'} ({ver} -> previous)")
    if f["manual_fix"]:
        at(r.randint(5, 20), "Manual data repair: backfill script run against affected rows, verified by two engineers")
    if not f["status_page"] and f["customer_facing"]:
        at(1, "Decision recorded: status page NOT updated as the IC expected recovery within minutes")
    tl.append(f"+{dur}m  Error rates back to baseline; incident resolved")
    logs = []
    lt = (hh * 3600 + mm * 60)
    for _ in range(r.randint(10, 15)):
        lt += r.randint(3, 90)
        msg = r.choice(LOG_MSGS if cause == "bad_deploy" else LOG_MSGS[:5] + LOG_MSGS[6:]).format(svc=svc, lat=r.randint(900, 9000), n=r.randint(1, 3), d=r.randint(40, 96),
                                        c=r.randint(8, 40), ip=f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 250)}",
                                        ver=ver, path=r.choice(["orders", "cart/items", "session", "search"]),
                                        lag=r.randint(20000, 900000), pct=r.randint(3, 40))
        logs.append(f"{(lt // 3600) % 24:02d}:{(lt // 60) % 60:02d}:{lt % 60:02d} {msg}")
    actions = []
    kinds = [primary] + r.sample([k for k in ACTION_TYPES if k != primary], 2)
    for i, k in enumerate(kinds):
        owner = person(r) if (f["owners"] or i < 2) else "UNASSIGNED"
        actions.append(f"{i + 1}. [{'P0' if i == 0 else 'P1' if i == 1 else 'P2'}] {ACTION_TYPES[k].format(**ctx)} — owner: {owner}, due within {r.choice([1, 2, 3, 4, 6])} weeks")
    impact = ("Customer impact and SLA\n" + yn(f["sla"], "The monthly availability SLO of 99.9% for this service was breached, and the enterprise SLA commitment was missed for the month. ",
                                              "The availability SLO remained within budget for the month and no contractual SLA was breached. ")
              + yn(f["credits"], "Affected enterprise customers will receive service credits per their contracts; finance has been notified.",
                   "No service credits will be issued for this incident."))
    hist = "History\n" + yn(f["recurrence"], f"This is a repeat: a similar incident affected {svc} on {date(r, 2023)} (INC-{r.randint(1000, 9999)}), and the action item from that review was never completed.",
                             f"We found no previous incident with a similar failure mode in {svc} over the past two years.")
    follow = yn(f["followup"], f"A follow-up review is scheduled for {date(r)} at 15:00 UTC with the {team} and SRE teams.",
                "A follow-up review has not been scheduled yet; the IC will propose a time once action items are triaged.")
    parts = [title, summary, "Detection\n" + det_txt, rc_txt, "Timeline (UTC)\n" + "\n".join(tl),
             "Selected log excerpt\n" + "\n".join(logs), impact, hist,
             "Action items\n" + "\n".join(actions) + "\n" + follow]
    extras = [
        "What went well\n- The incident channel was opened quickly and roles were clear.\n- Engineers from two teams joined within minutes and split the investigation sensibly.\n"
        "- Dashboards for the service had the right breakdowns by region and endpoint.",
        "What went poorly\n- The runbook for this service referenced a dashboard that was deleted last quarter.\n- Several people made changes in parallel without announcing them in the channel.\n"
        "- It took too long to establish whether the problem was in our code or an upstream dependency.",
        "Where we got lucky\n- The incident started before the regional peak rather than during it.\n- A senior engineer who had written the original component happened to be online and recognised the symptom.",
        f"Supporting metrics\nPeak 5xx rate: {r.randint(3, 60)}%. Peak p99 latency: {r.randint(1200, 30000)} ms. Requests affected (estimate): {r.randint(20, 900) * 1000:,}. "
        f"Error budget consumed: {r.randint(101, 160) if f['sla'] else r.randint(5, 90)}% of the monthly budget. Pages sent: {r.randint(1, 9)}. Engineers involved: {r.randint(3, 14)}.",
        "Review process note: this document follows the blameless postmortem format. It focuses on systems and processes rather than individual mistakes; "
        "names appear only to make the timeline readable. Comments should be added inline and resolved before the review meeting.",
        f"Glossary\nIC: incident commander, the single decision-maker during the incident. SLO: service level objective, internal target. "
        f"SLA: contractual commitment to customers. Error budget: allowed unreliability for the period. {svc}: {team} service handling {r.choice(['order placement', 'search queries', 'login tokens', 'outbound notifications', 'ledger postings', 'video renditions', 'stock levels', 'API aggregation'])}.",
        f"Open questions\n- Why did the autoscaler not react during the first {r.randint(4, 15)} minutes?\n- Should the {comp} have a circuit breaker by default?\n"
        "- Do we need a separate alert for partial regional degradation?",
    ]
    state = fill(r, parts, extras, r.randint(4900, 5900))
    noul = {
        "customer_facing": N("Did the incident cause user-visible errors for external customers?"),
        "data_loss": N("Does the report state that some data was permanently lost?"),
        "rollback_done": N("Was a deployment or configuration rollback performed during mitigation?"),
        "auto_detected": N("Was the incident first detected by an automated monitoring alert?"),
        "sla_breached": N("Does the report say a contractual SLA was breached?"),
        "status_page": N("Was the public status page updated during the incident?"),
        "paged_quickly": N("Was the on-call engineer paged within five minutes of the first signal?"),
        "repeat_incident": N("Does the report mention a similar previous incident?"),
        "flag_used": N("Was a feature flag turned off to mitigate impact?"),
        "db_involved": N("Was a database component directly involved in the failure?"),
        "over_an_hour": N("Did the incident last longer than sixty minutes?"),
        "all_owners": N("Does every action item have a named owner?"),
        "vendor_cause": N("Was an external vendor or provider part of the root cause?"),
        "weekend_start": N("Did the incident begin on a Saturday or Sunday?"),
        "execs_notified": N("Were executives or senior leadership notified during the incident?"),
        "cause_confirmed": N("Is the root cause described as confirmed rather than suspected?"),
        "manual_repair": N("Did mitigation include a manual data repair or backfill?"),
        "alert_dismissed": N("Was an alert initially dismissed as noise?"),
        "test_gap": N("Is a missing test or staging check named as a contributing factor?"),
        "credits_issued": N("Will customers receive service credits because of this incident?"),
        "review_scheduled": N("Is a follow-up review meeting scheduled for a specific date?"),
        "multi_region": N("Was more than one region affected?"),
    }
    choice = {
        "severity": C("What severity level was assigned to the incident?", {"sev1": None, "sev2": None, "sev3": None}),
        "root_cause": C("Which category best describes the root cause?",
                        {"config_change": None, "bad_deploy": "faulty code release", "capacity": "traffic exceeded capacity",
                         "third_party": "external provider failure", "hardware": None}),
        "detection": C("How was the incident first detected?",
                       {"monitoring": "automated alert", "customer_report": "external customer", "internal_user": "employee noticed"}),
        "scope": C("How widely were regions affected?", {"single_region": None, "multi_region": None, "global": "all regions"}),
        "top_action": C("What kind of action item is listed as highest priority (P0)?",
                        {"add_monitoring": None, "add_tests": None, "capacity_increase": None, "process_change": None,
                         "vendor_escalation": None}),
        "duration": C("How long did the incident last?", {"under_30m": None, "30m_to_2h": None, "over_2h": None}),
    }
    return state, noul, choice
