"""Domain 4: HR policy cases."""

from .pieces import C, CITIES, MONTHS, N, date, fill, person, yn

HR_CASES = {
    "leave": "requests {weeks} weeks of {leave_kind} starting {start}.",
    "complaint": "has raised a formal complaint about {complaint_about}.",
    "relocation": "requests a relocation from the {city1} office to {city2} for {reason}.",
    "accommodation": "requests a workplace adjustment: {adjust}.",
}


def hr_case(r):
    kind = r.choice(list(HR_CASES))
    emp = person(r)
    mgr = person(r)
    hrbp = person(r)
    tenure_m = r.choice([r.randint(2, 11), r.randint(13, 40), r.randint(48, 160)])
    f = {k: r.random() < 0.5 for k in ["mgr_approved", "docs", "union", "prior_warning", "remote", "exempt", "pip", "witnesses",
                                           "retaliation", "backfill", "legal", "confidential_breach", "payroll_impact", "probation_ext", "interim"]}
    emp_type = r.choice(["full_time", "part_time", "contractor"])
    probation = tenure_m < 6
    ctx = dict(weeks=r.randint(2, 16), leave_kind=r.choice(["parental leave", "unpaid personal leave", "medical leave (certificate provided separately)", "caregiver leave"]),
               start=date(r, 2025), complaint_about=r.choice(["repeated comments made by a colleague in team meetings", "being excluded from project assignments after returning from leave",
                                                              "overtime being assigned unevenly within the shift team", "a manager's remarks in a performance conversation"]),
               city1=r.choice(CITIES), city2=r.choice(CITIES), reason=r.choice(["family reasons", "a partner's job move", "a role on a new team"]),
               adjust=r.choice(["a compressed four-day week", "a standing desk and screen-reader software", "a later start time on two days per week", "a quieter workspace away from the call floor"]))
    dept = r.choice(["Customer Operations", "Finance", "Engineering", "Warehouse & Logistics", "Marketing", "Facilities"])
    header = (f"HR CASE RECORD — Confidential\nCase ID: HR-{r.randint(24000, 24999)}    Opened: {date(r)}\nEmployee: {emp} ({dept})\n"
              f"Employment type: {emp_type.replace('_', '-')}    Tenure: {tenure_m} months    FLSA status: {'exempt' if f['exempt'] else 'non-exempt'}\n"
              f"Line manager: {mgr}    HR business partner: {hrbp}")
    req = f"Request / issue\n{emp.split()[0]} " + HR_CASES[kind].format(**ctx)
    req += " " + r.choice(["The request was submitted through the HR portal.", "The issue was first raised verbally with the manager and then put in writing.",
                           "The employee emailed HR directly and asked for a meeting."])
    policy = {
        "leave": f"Policy: employees with at least 12 months of service are eligible for job-protected leave of up to 12 weeks. Leave beyond that requires director approval. "
                 f"Requests must be made 30 days in advance where foreseeable. Contractors are not covered by this policy.",
        "complaint": "Policy: complaints are acknowledged within 3 working days, investigated by someone outside the reporting line, and concluded within 30 days where possible. "
                     "Retaliation against anyone who raises a complaint in good faith is a disciplinary matter.",
        "relocation": "Policy: internal relocations require manager and receiving-site approval. Relocation support is paid only to full-time employees past probation, "
                      "and is repayable if the employee leaves within 12 months.",
        "accommodation": "Policy: adjustments are assessed through an interactive process with the employee. Supporting documentation may be requested but diagnosis details "
                         "are not recorded in the case file. Reasonable adjustments should be implemented within 20 working days.",
    }[kind]
    facts = ["Case facts"]
    facts.append(yn(f["mgr_approved"], f"- {mgr} has approved the request in writing (email dated {date(r)}).",
                    f"- {mgr} has not approved; the manager raised concerns about {r.choice(['team coverage during peak season', 'the timing relative to a product launch', 'budget'])}."))
    facts.append(yn(f["docs"], "- Supporting documentation has been received and filed in the restricted folder.", "- Supporting documentation is still outstanding."))
    facts.append(yn(f["union"], f"- The employee is a member of the {r.choice(['UNITE', 'Retail Workers Union', 'Professional Staff Association'])} and has asked for a representative at meetings.",
                    "- The employee is not a union member and has not asked for a representative."))
    facts.append(yn(f["prior_warning"], f"- There is a live written warning on file from {date(r)} for {r.choice(['attendance', 'conduct', 'missed deadlines'])}.",
                    "- No disciplinary warnings are on file."))
    facts.append(yn(f["pip"], "- The employee is currently on a performance improvement plan, due to end in six weeks.", "- The employee is not on a performance improvement plan."))
    facts.append(yn(f["remote"], "- The employee works fully remotely under an existing agreement.", "- The employee works on site at least four days per week."))
    if kind == "complaint":
        facts.append(yn(f["witnesses"], f"- {r.randint(2, 4)} witnesses have been named and have agreed to be interviewed.", "- No witnesses have been named."))
        facts.append(yn(f["retaliation"], "- The employee alleges that their shifts were changed after they raised the complaint.", "- No retaliation has been alleged."))
    else:
        facts.append(yn(f["witnesses"], "- Two colleagues have offered written support for the request.", "- No colleagues have been consulted."))
    facts.append(yn(f["legal"], "- Employment counsel has been consulted because of potential legal exposure.", "- Legal has not been involved."))
    facts.append(yn(f["backfill"], "- Finance has approved a temporary backfill for the employee's role.", "- No backfill has been arranged."))
    facts.append(yn(f["payroll_impact"], "- Payroll has been asked to change pay or hours as a result of this case.", "- There is no change to pay or hours."))
    facts.append(yn(f["interim"], "- Interim measures are in place while the case is open.", "- No interim measures have been put in place."))
    if f["confidential_breach"]:
        facts.append("- The employee reports that details of the case were discussed by a team lead in an open-plan area.")
    timeline = ["Case log"]
    log_pool = ["Acknowledgement sent to employee.", f"Meeting held with employee and {hrbp.split()[0]}; notes agreed.",
                "Manager briefed on process and confidentiality expectations.", "Employee asked for an update; told decision expected within two weeks.",
                "Policy owner consulted on eligibility question.", "Draft outcome letter prepared for review.", "Follow-up meeting rescheduled at employee's request.",
                "Occupational health referral discussed; employee agreed to think about it.", "Team coverage plan reviewed with operations lead."]
    r.shuffle(log_pool)
    for i, ln in enumerate(log_pool[:r.randint(5, 8)]):
        timeline.append(f"{date(r)}: {ln}")
    emp_stmt = "Employee statement (excerpt)\n\"" + " ".join(r.sample([
        "I've tried to raise this informally before but nothing changed.",
        "I want to keep doing my job well, I just need the company to meet me halfway.",
        "I'm worried that asking for this will count against me at review time.",
        "My manager has been supportive in private but says the decision isn't up to them.",
        "I have checked the handbook and I believe I meet the criteria.",
        "I'd like a written answer so I can plan around it.",
        "Other people on the team have had similar arrangements without any problem.",
    ], 4)) + "\""
    mgr_stmt = "Manager comments\n" + " ".join(r.sample([
        f"{emp.split()[0]} is a reliable member of the team and I'd like to keep them.",
        "My main concern is cover during the busy period in the next quarter.",
        "I have not discussed this with the rest of the team to protect confidentiality.",
        "I'm happy to try a trial period and review after eight weeks.",
        "There have been some tensions on the team recently that may be relevant.",
        "I would need at least three weeks' notice to reorganise the rota.",
    ], 3))
    mtg = [f"Meeting notes ({date(r)}, attendees: {emp.split()[0]}, {hrbp.split()[0]}" + (", union representative" if f["union"] else "") + ")"]
    qa = [
        (f"{hrbp.split()[0]} explained the process, the expected timeline and who will make the decision.", f"{emp.split()[0]} said they understood and asked whether the outcome would be shared with the team."),
        (f"{hrbp.split()[0]} confirmed that only the people who need to know will be told, and that the team will get a neutral message about cover if needed.", f"{emp.split()[0]} said that was acceptable."),
        (f"{hrbp.split()[0]} asked what outcome would work best.", f"{emp.split()[0]} described their preferred option and said they were open to a compromise on dates."),
        (f"{hrbp.split()[0]} asked whether anything in the current working arrangement was making the situation harder.", f"{emp.split()[0]} mentioned the rota is published late, which makes planning difficult."),
        (f"{hrbp.split()[0]} reminded the employee about the employee assistance programme and how to contact it.", f"{emp.split()[0]} said they had used it before and found it helpful."),
        (f"{hrbp.split()[0]} asked if there was anything the employee wanted added to the record.", f"{emp.split()[0]} asked that their earlier email be attached to the case."),
    ]
    for q, ans in r.sample(qa, 4):
        mtg.append(f"- {q} {ans}")
    options = ("Options considered\n" + "\n".join(f"{i + 1}. {o}" for i, o in enumerate(r.sample([
        "Approve the request as submitted.", "Approve with modified dates or a trial period.", "Decline and explain the business reasons in writing.",
        "Refer to the department director for a decision because it falls outside standard policy.", "Pause the decision until missing information is received.",
        "Offer an alternative arrangement that addresses the main concern."], 4))))
    parts = [header, req, policy, "\n".join(facts), emp_stmt, mgr_stmt, "\n".join(mtg), options, "\n".join(timeline)]
    extras = [
        "Data handling: this record is restricted to HR and the named decision-makers. Health information, if any, is held separately by occupational health and is not included here. "
        "Records are retained for six years after employment ends.",
        f"Headcount context: {dept} has {r.randint(8, 60)} employees, {r.randint(0, 5)} open vacancies and {r.randint(0, 4)} people currently on leave. "
        f"Attrition in the last 12 months was {r.randint(4, 28)}%.",
        "HRBP assessment: the request appears to be made in good faith. The main risks are inconsistency with previous decisions in the department and the effect on team workload. "
        "A consistent, documented rationale is needed whatever the outcome.",
        f"Previous similar cases in the department: {r.randint(0, 6)} in the last two years; outcomes were mixed and two were resolved informally. "
        "The HRBP has reviewed them for consistency.",
        "Next steps: confirm eligibility against the policy, meet the employee to discuss options, document the decision and the reasons, and send the outcome letter with the right of appeal.",
        f"Training records: {emp.split()[0]} has completed mandatory training for {r.randint(2023, 2024)} (code of conduct, data protection, health and safety). "
        f"The manager completed the 'Handling sensitive conversations' course in {r.choice(MONTHS)} {r.randint(2022, 2024)}.",
        f"Absence summary (last 12 months): {r.randint(0, 14)} days sickness absence in {r.randint(0, 5)} spells, {r.randint(5, 25)} days annual leave taken of {r.choice([25, 28, 30])}. "
        "Absence data is included for workload planning only and is not a factor in the decision.",
        "Comparable policy note: the company handbook was updated last year to align leave, flexible working and adjustment requests under one process, "
        "but department-level guidance has not yet been fully rewritten, which has caused some confusion among line managers.",
        "Appeal process: the employee may appeal within 10 working days of the outcome letter. Appeals are heard by a manager at least one level above the original decision-maker "
        "who has not been involved in the case.",
    ]
    state = fill(r, parts, extras, r.randint(4900, 6000))
    if kind == "leave":
        eligible = emp_type != "contractor" and tenure_m >= 12
    elif kind == "relocation":
        eligible = emp_type == "full_time" and not probation
    else:
        eligible = emp_type != "contractor"
    noul = {
        "manager_approved": N("Has the line manager approved the request in writing?"),
        "docs_received": N("Has the supporting documentation been received?"),
        "union_member": N("Is the employee a union member who asked for a representative?"),
        "live_warning": N("Is there a live disciplinary warning on the employee's file?"),
        "on_pip": N("Is the employee currently on a performance improvement plan?"),
        "fully_remote": N("Does the employee work fully remotely?"),
        "legal_involved": N("Has employment counsel or legal been consulted?"),
        "backfill_approved": N("Has a temporary backfill been approved?"),
        "pay_change": N("Will the employee's pay or hours change because of this case?"),
        "interim_measures": N("Are interim measures in place while the case is open?"),
        "confidentiality_issue": N("Does the employee report that case details were discussed openly?"),
        "exempt_status": N("Is the employee classified as FLSA exempt?"),
        "in_probation": N("Has the employee been employed for less than six months?"),
        "over_year": N("Has the employee been with the company for at least 12 months?"),
        "retaliation_alleged": N("Does the employee allege retaliation for raising the issue?"),
        "witness_support": N("Have witnesses or colleagues been named in support?"),
        "policy_eligible": N("Does the employee appear eligible under the quoted policy?",
                             {"true": "meets the tenure and employment-type rules", "false": "fails a stated rule"}),
    }
    choice = {
        "case_type": C("What type of HR case is this?", {"leave": None, "complaint": None, "relocation": None, "accommodation": "workplace adjustment"}),
        "employment_type": C("What is the employee's employment type?", {"full_time": None, "part_time": None, "contractor": None}),
        "tenure_band": C("How long has the employee worked here?", {"under_1y": None, "1_to_4y": None, "over_4y": None}),
        "department": C("Which department does the employee work in?",
                        {"customer_ops": None, "finance": None, "engineering": None, "logistics": "warehouse and logistics", "marketing": None, "facilities": None}),
        "manager_stance": C("What is the manager's position on the request?",
                            {"approved": None, "not_approved": "concerns raised, no approval"}),
        "urgency": C("How urgently should HR act on this case?", {"routine": None, "priority": "legal, retaliation or confidentiality risk"}),
    }
    return state, noul, choice
