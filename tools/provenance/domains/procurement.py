"""Domain 8: procurement requests."""

from .pieces import C, CITIES, N, date, fill, money, person, yn

PROC_ITEMS = {
    "it_hardware": ("laptops and docking stations", ["Laptop 14\\\" 32 GB RAM", "USB-C docking station", "27\\\" monitor", "Extended warranty, 3 years"]),
    "software": ("software licences", ["Annual licence, per seat", "Premium support tier", "Single sign-on add-on", "Onboarding and training package"]),
    "professional_services": ("consulting services", ["Discovery workshop (5 days)", "Implementation, time and materials", "Project management", "Travel expenses (estimate)"]),
    "facilities": ("office furniture", ["Height-adjustable desk", "Task chair", "Acoustic booth", "Delivery and installation"]),
    "lab_equipment": ("laboratory equipment", ["Benchtop centrifuge", "Ultra-low freezer -80C", "Pipette set", "Service contract, 2 years"]),
}


def procurement(r):
    cat = r.choice(list(PROC_ITEMS))
    what, lines = PROC_ITEMS[cat]
    requester = person(r)
    approver = person(r)
    vendor = r.choice({"it_hardware": ["Corvid Technology Partners", "Nordpeak Systems"], "software": ["Vantage Software Ltd", "Lumen Cloudworks"],
                       "professional_services": ["Brightline Consulting", "Fennick Advisory"], "facilities": ["Halden Office Interiors", "Workwell Furniture Co"],
                       "lab_equipment": ["Sable Scientific Supply", "Corran Lab Systems"]}[cat])
    f = {k: r.random() < 0.5 for k in ["budget_ok", "three_quotes", "sole_source", "mgr_approved", "fin_approved", "new_vendor", "security_review",
                                           "urgent", "capex", "contract_exists", "diverse_supplier", "split_po", "delivery_before", "tax_exempt", "conflict"]}
    if f["three_quotes"]:
        f["sole_source"] = False
    items = []
    total = 0
    for ln in r.sample(lines, r.randint(3, 4)):
        q = r.randint(1, 40)
        unit = r.randint(40, 4000)
        total += q * unit
        items.append(f"- {ln.encode().decode('unicode_escape')}: qty {q} x {money(unit)} = {money(q * unit)}")
    tier = "under_10k" if total < 10000 else ("10k_to_50k" if total <= 50000 else "over_50k")
    header = (f"PURCHASE REQUISITION PR-{r.randint(40000, 49999)}\nRequester: {requester}, {r.choice(['IT Operations', 'Research Lab 3', 'Workplace Services', 'Data Platform', 'Customer Success'])}\n"
              f"Preferred supplier: {vendor}    Category: {cat.replace('_', ' ')}    Cost centre: CC-{r.randint(1000, 9999)}\nDate submitted: {date(r)}")
    just = ("Business justification\n" + r.choice([
        f"We are onboarding {r.randint(6, 30)} new starters next quarter and need {what} ready for their first day.",
        f"The existing {what} are past end of life and failing; {r.randint(2, 9)} incidents were logged last month.",
        f"A new client contract requires us to deliver a project that depends on these {what}.",
        f"Our team has outgrown the current set-up and the {what} are needed to meet the agreed service levels.",
    ]) + " " + yn(f["urgent"], f"This is urgent: the items are needed by {date(r)}, which is less than two weeks away.", "There is no hard deadline, but earlier delivery would be helpful."))
    lines_txt = "Line items\n" + "\n".join(items) + f"\nTotal (excl. tax): {money(total)}"
    sourcing = ("Sourcing\n" + yn(f["three_quotes"], f"Three quotes were obtained: {vendor} {money(total)}, {r.choice(['Apex Supply', 'Kellerman & Co', 'Orbital Procurement'])} {money(total * r.uniform(1.03, 1.2))}, "
                                  f"{r.choice(['Greywell Ltd', 'Pinecrest Trading', 'Marlow Direct'])} {money(total * r.uniform(1.05, 1.3))}.",
                                  f"Only one quote was obtained, from {vendor}.")
                + " " + yn(f["sole_source"], f"A sole-source justification is attached: {vendor} is the only authorised reseller for this product in the region.", "No sole-source justification has been provided.")
                + " " + yn(f["contract_exists"], f"{vendor} is on an existing framework agreement (FA-{r.randint(100, 999)}), so framework prices apply.", "There is no existing contract or framework agreement with this supplier.")
                + " " + yn(f["new_vendor"], "The supplier is not yet set up in the vendor master; onboarding (bank details, tax forms, sanctions screening) is required before a PO can be issued.",
                           "The supplier is already an approved vendor in the system.")
                + " " + yn(f["diverse_supplier"], "The supplier is a certified small or diverse business.", "The supplier is not a certified small or diverse business."))
    fin = ("Budget and approvals\n" + yn(f["budget_ok"], "Budget owner confirms sufficient funds remain in the cost centre for this financial year.",
                                         f"The cost centre has only {money(total * r.uniform(0.3, 0.8))} remaining, which does not cover this request.")
           + " " + yn(f["capex"], "Finance has classified this as capital expenditure; assets will be tagged and depreciated.", "This is operating expenditure.")
           + " " + yn(f["mgr_approved"], f"Line manager {approver} approved on {date(r)}.", f"Line manager approval from {approver} is pending.")
           + " " + yn(f["fin_approved"], "Finance business partner has approved.", "Finance approval has not yet been given.")
           + " " + yn(f["security_review"], "Information security review completed; the supplier passed with no high-risk findings.", "No information security review has been done.")
           + " " + yn(f["tax_exempt"], "A tax exemption certificate applies to this purchase.", "Standard sales tax applies."))
    delivery = ("Delivery\n" + f"Supplier lead time: {r.randint(3, 45)} working days. Delivery to {r.choice(CITIES)} site, loading bay B. "
                + yn(f["delivery_before"], "The supplier has confirmed in writing that it can deliver before the requested date.", "The supplier has not confirmed it can meet the requested date."))
    flags = ["Compliance notes"]
    flags.append(yn(f["split_po"], "- The same requester raised two other requisitions to this supplier this month, each just under the approval threshold; procurement has flagged possible order splitting.",
                    "- No related requisitions to this supplier in the last 90 days."))
    flags.append(yn(f["conflict"], f"- The requester has declared that a family member works for {vendor}.", "- The requester has declared no conflict of interest."))
    thresholds = ("Policy thresholds: under $10,000 requires line manager approval and one quote; $10,000 to $50,000 requires finance approval and three quotes or a sole-source justification; "
                  "over $50,000 additionally requires a director's sign-off and a formal tender unless a framework agreement applies.")
    comments = ["Comments"]
    for c in r.sample([
            "Can we standardise on the same model as last year so support is simpler?", "Please attach the quote PDF, the link in the form has expired.",
            "Is installation included or charged separately?", "We should check whether the warranty covers on-site repairs.",
            "Could we phase this over two quarters to ease cash flow?", "Looks fine from the technical side.", "Please confirm the shipping address, the B site moved last year.",
            "Is there a volume discount if we combine with the other team's order?"], r.randint(3, 5)):
        comments.append(f"{person(r)}: {c}")
    spec = ("Specification (from requester)\n" + {
        "it_hardware": "Machines must support the standard corporate image, have at least 32 GB RAM and a 3-year next-business-day on-site warranty. Docks must be compatible with the existing monitors.",
        "software": "The tool must support single sign-on via SAML, role-based access control, audit logs exportable to our SIEM, and data hosting in our region. Seat count may grow by 20% within the year.",
        "professional_services": "The consultants will run discovery workshops, produce a target architecture and support implementation. Day rates must be fixed for the engagement; travel billed at cost.",
        "facilities": "Desks must meet the ergonomic standard adopted last year. Chairs need adjustable lumbar support. The acoustic booth must fit through a standard 90 cm doorway.",
        "lab_equipment": "Equipment must be compatible with our existing consumables, include installation qualification documents and be serviceable on site within 72 hours.",
    }[cat] + " " + r.choice(["Alternatives were considered but did not meet the integration requirement.", "The team trialled the product for four weeks before raising this request.",
                             "The specification was agreed with the IT architecture board.", "End users were consulted on the shortlist."]))
    evals = ("Evaluation\n" + f"Price weighted {r.choice([40, 50, 60])}%, quality and fit {r.choice([25, 30, 35])}%, delivery and support the remainder. "
             + f"{vendor} scored highest on " + r.choice(["price and delivery time", "fit to specification", "support terms", "overall value"]) + ". "
             + r.choice(["The evaluation was done by the requester alone.", "Two people scored the quotes independently and the results were averaged.", "Procurement reviewed the scoring sheet."]))
    appr_log = ["Approval workflow log"]
    for step in ["Submitted by requester", "Routed to line manager", "Routed to finance business partner", "Procurement review queued"]:
        appr_log.append(f"{date(r)} {r.randint(8, 17):02d}:{r.randint(0, 59):02d}  {step}")
    parts = [header, just, spec, lines_txt, sourcing, evals, fin, delivery, "\n".join(flags), thresholds, "\n".join(appr_log), "\n".join(comments)]
    extras = [
        "Supplier performance (last 12 months): on-time delivery 91%, quality incidents 2, invoices disputed 1. Average payment terms agreed: net 30.",
        "Sustainability: preference is given to suppliers with a published carbon reduction plan and take-back schemes for electronics and furniture. "
        "This is a scoring factor, not a mandatory requirement, for purchases under the tender threshold.",
        f"Asset management: items over {money(1000)} per unit are recorded in the asset register with a tag number, location and owner. The requester is responsible for confirming receipt in the system within five working days of delivery.",
        "Payment: the organisation pays by purchase order only; invoices without a valid PO number are returned to the supplier unpaid. Credit card purchases are limited to $2,500 per transaction.",
        f"Market note: prices for {what} have risen about {r.randint(2, 12)}% this year; several suppliers quote validity of only 14 days.",
        "Receiving instructions: deliveries must be booked 24 hours in advance with the site facilities desk. Pallets are accepted between 7:00 and 15:00 on weekdays only.",
        f"Previous purchase: a similar order was placed {r.randint(6, 30)} months ago with a different supplier; feedback from that project was that setup took longer than planned.",
    ]
    state = fill(r, parts, extras, r.randint(5000, 6000))
    noul = {
        "budget_available": N("Is there enough budget in the cost centre for this request?"),
        "three_quotes": N("Were three competing quotes obtained?"),
        "sole_source": N("Is a sole-source justification attached?"),
        "manager_approved": N("Has the line manager approved the requisition?"),
        "finance_approved": N("Has finance approved the requisition?"),
        "new_supplier": N("Does the supplier still need to be onboarded as a new vendor?"),
        "security_reviewed": N("Has an information security review of the supplier been completed?"),
        "urgent": N("Are the items needed within two weeks?"),
        "is_capex": N("Is the purchase classified as capital expenditure?"),
        "framework_exists": N("Is the supplier on an existing framework agreement?"),
        "diverse_supplier": N("Is the supplier a certified small or diverse business?"),
        "possible_split": N("Has procurement flagged possible order splitting?"),
        "delivery_confirmed": N("Has the supplier confirmed it can deliver on time?"),
        "tax_exempt": N("Does a tax exemption apply to this purchase?"),
        "conflict_declared": N("Has the requester declared a conflict of interest?"),
        "over_tender_limit": N("Does the total exceed $50,000?"),
        "policy_compliant": N("Does the sourcing meet the quote rules for the request's value tier?",
                              {"true": "enough quotes or valid justification for its tier", "false": "quote rule not met"}),
    }
    choice = {
        "category": C("What category of purchase is this?", {"it_hardware": None, "software": None, "professional_services": None, "facilities": None, "lab_equipment": None}),
        "value_tier": C("Which value tier does the total fall in?", {"under_10k": None, "10k_to_50k": None, "over_50k": None}),
        "next_approver": C("Who needs to act next on this requisition?",
                           {"line_manager": None, "finance": None, "director": None, "procurement": "sourcing or vendor setup", "none": "fully approved"}),
        "main_risk": C("What is the main compliance risk?", {"none": None, "order_splitting": None, "conflict_of_interest": None, "insufficient_quotes": None, "budget": None}),
        "recommendation": C("What should procurement do with this request?", {"approve": None, "return_to_requester": "missing information", "escalate": "policy or conflict concern"}),
        "expense_type": C("How is the expense classified?", {"capex": None, "opex": None}),
    }
    return state, noul, choice
