"""Domain 6: contract clauses."""

from .pieces import C, CITIES, N, date, fill, money, person, yn

def contract(r):
    vendor = r.choice(["Quillstone Analytics Ltd.", "Meridian Cloud Services Inc.", "Paloverde Logistics LLC", "Tessellate Software GmbH", "Ashgrove Staffing Solutions"])
    customer = r.choice(["Harlow Retail Group plc", "Bramblewood Health Partners", "Kestrel Manufacturing Co.", "Northwind Municipal Credit Union", "Solent Foods Ltd."])
    law = r.choice(["new_york", "delaware", "england_wales", "california", "ontario"])
    law_txt = {"new_york": "the State of New York", "delaware": "the State of Delaware", "england_wales": "England and Wales", "california": "the State of California", "ontario": "the Province of Ontario"}[law]
    notice = r.choice([30, 60, 90])
    net = r.choice([15, 30, 45, 60])
    cap_mult = r.choice([1, 2, 3])
    fees = r.randint(4, 90) * 10000
    f = {k: r.random() < 0.5 for k in ["auto_renew", "conv_term", "uncapped_ip", "mutual_indemn", "arbitration", "exclusivity", "subcontract",
                                           "audit", "price_increase", "data_residency", "sla_credits", "non_solicit", "assignment", "insurance_req", "late_interest"]}
    term_years = r.choice([1, 2, 3, 5])
    ag = f"MASTER SERVICES AGREEMENT — EXCERPTED CLAUSES\nBetween {vendor} (\"Supplier\") and {customer} (\"Customer\"). Effective date: {date(r)}. Agreement ref: MSA-{r.randint(1000, 9999)}."
    cl = []
    cl.append(f"2. Term. This Agreement starts on the Effective Date and continues for an initial term of {term_years} year{'s' if term_years > 1 else ''}. "
              + yn(f["auto_renew"], f"It then renews automatically for successive one-year periods unless either party gives at least {notice} days' written notice of non-renewal before the end of the then-current term.",
                   "It expires at the end of the initial term unless the parties agree a renewal in writing."))
    cl.append(f"3. Fees and Payment. Customer shall pay the annual fees of {money(fees)} set out in Order Form 1. Invoices are payable within {net} days of receipt. "
              + yn(f["late_interest"], "Late amounts accrue interest at 1.5% per month or the maximum lawful rate, if lower.", "No interest is charged on late payments, but Supplier may suspend the Services after 30 days' written notice of non-payment.")
              + " " + yn(f["price_increase"], f"Supplier may increase fees on each renewal by no more than {r.choice([3, 5, 7])}% by giving 60 days' notice.", "Fees are fixed for the initial term and any renewal term unless the parties agree otherwise in writing."))
    cl.append("7. Termination. Either party may terminate for material breach that remains uncured 30 days after written notice. "
              + yn(f["conv_term"], f"Customer may also terminate for convenience on {notice} days' written notice, subject to payment of fees for Services performed up to the termination date.",
                   "Neither party may terminate this Agreement for convenience."))
    cl.append(f"9. Limitation of Liability. Except for the excluded claims, each party's total liability under this Agreement is limited to {cap_mult}x the fees paid or payable in the twelve months before the claim. "
              + yn(f["uncapped_ip"], "The cap does not apply to breach of confidentiality, a party's indemnification obligations, or infringement of the other party's intellectual property.",
                   "The cap applies to all claims, including indemnification, except for fraud and death or personal injury caused by negligence.")
              + " Neither party is liable for indirect or consequential losses, including lost profits.")
    cl.append("10. Indemnification. " + yn(f["mutual_indemn"], "Each party shall indemnify the other against third-party claims arising from its breach of this Agreement or its gross negligence, and Supplier shall additionally indemnify Customer against claims that the Services infringe third-party IP.",
                                            "Supplier shall indemnify Customer against third-party claims that the Services infringe intellectual property rights. Customer gives no indemnity under this Agreement."))
    cl.append(f"12. Governing Law and Disputes. This Agreement is governed by the laws of {law_txt}. "
              + yn(f["arbitration"], f"Disputes not resolved by negotiation within 30 days shall be finally settled by binding arbitration before a single arbitrator, seated in {r.choice(CITIES)}.",
                   "The courts of that jurisdiction have exclusive jurisdiction over any dispute."))
    cl.append("14. Exclusivity. " + yn(f["exclusivity"], "During the term Customer shall not procure services substantially similar to the Services from any other supplier.",
                                       "Nothing in this Agreement restricts Customer from using other suppliers for similar services."))
    cl.append("15. Subcontracting and Assignment. " + yn(f["subcontract"], "Supplier may subcontract any part of the Services without consent, remaining responsible for its subcontractors.",
                                                          "Supplier may not subcontract any part of the Services without Customer's prior written consent.")
              + " " + yn(f["assignment"], "Either party may assign this Agreement to an affiliate or successor in a merger or sale without consent.",
                         "Neither party may assign this Agreement without the other party's prior written consent."))
    cl.append("16. Audit. " + yn(f["audit"], "Customer may audit Supplier's compliance with this Agreement once per year on 30 days' notice, at Customer's cost.",
                                 "Supplier will provide its annual SOC 2 Type II report on request; no other audit rights are granted."))
    cl.append("17. Data Protection. " + yn(f["data_residency"], "All Customer Data shall be stored and processed only in data centres located in the European Economic Area or the United Kingdom.",
                                           "Supplier may store and process Customer Data in any country where it or its sub-processors operate, subject to the Data Processing Addendum.")
              + " Supplier shall notify Customer of a personal data breach without undue delay and in any event within " + r.choice(["24", "48", "72"]) + " hours of becoming aware of it.")
    cl.append("18. Service Levels. " + yn(f["sla_credits"], f"Supplier commits to {r.choice(['99.5', '99.9', '99.95'])}% monthly availability. If availability falls below that level, Customer receives service credits of 5% of the monthly fee per 0.1% shortfall, capped at 25%.",
                                          "Supplier will use commercially reasonable efforts to keep the Services available, but no availability commitment or service credits apply."))
    cl.append("20. Non-Solicitation. " + yn(f["non_solicit"], "During the term and for 12 months after, neither party shall solicit for employment any employee of the other who was involved in the Services.",
                                            "This Agreement contains no restriction on hiring the other party's personnel."))
    cl.append("22. Insurance. " + yn(f["insurance_req"], f"Supplier shall maintain professional indemnity and cyber insurance of at least {money(r.choice([1, 2, 5]) * 1000000)} per claim and provide certificates on request.",
                                     "No specific insurance requirements apply."))
    review = (f"Legal review notes ({person(r)}, commercial counsel)\n" + " ".join(r.sample([
        "The business owner wants to sign before quarter end, so turnaround matters.",
        "Supplier's paper was used as the starting point; several of our standard positions were conceded in the first round.",
        "Procurement confirmed that the fees are within the approved budget.",
        "The liability cap should be compared with the value of the data being processed.",
        "Security review of the Supplier has been completed and rated the Supplier as medium risk.",
        "The data processing addendum is a separate document and is not reviewed here.",
        "We should check whether the notice periods line up with our internal budget cycle.",
    ], 4)))
    defs = ("1. Definitions (excerpt). \"Services\" means the services described in each Order Form. \"Customer Data\" means all data submitted to the Services by or for Customer. "
            "\"Affiliate\" means an entity that controls, is controlled by or is under common control with a party. \"Business Day\" means a day other than a weekend or public holiday in the place of performance.")
    parts = [ag, defs] + cl + [review]
    extras = [
        "23. Force Majeure. Neither party is liable for delay caused by events beyond its reasonable control, provided it notifies the other promptly and uses reasonable efforts to resume performance. "
        "If the event continues for more than 60 days, either party may terminate the affected Order Form.",
        "24. Notices. Notices must be in writing and delivered by hand, courier or email to the addresses in the Order Form. Email notices of breach or termination must be confirmed by courier.",
        "25. Entire Agreement. This Agreement and its Order Forms are the entire agreement between the parties and supersede prior proposals. Purchase order terms are excluded.",
        "11. Confidentiality. Each party shall keep the other's Confidential Information confidential for the term and five years after, using at least reasonable care, and may disclose it only to personnel and advisers who need to know it.",
        "13. Warranties. Supplier warrants that the Services will perform materially in accordance with the Documentation and will be provided with reasonable skill and care. "
        "Customer's exclusive remedy for breach of this warranty is re-performance or, if that fails, termination of the affected Order Form and a refund of prepaid fees for the remaining period.",
        "19. Change Control. Either party may request changes to the scope of the Services. No change is binding until a written change order is signed by both parties, "
        "setting out any impact on fees, timetable and service levels.",
        "21. Publicity. Neither party shall use the other's name or logo in marketing materials without prior written approval, except that Supplier may list Customer as a client by name.",
        "26. Counterparts and Electronic Signature. This Agreement may be signed in counterparts and by electronic signature, each of which is an original.",
        f"Negotiation history: round one mark-up returned by Customer on {date(r)}; Supplier accepted {r.randint(3, 9)} of {r.randint(10, 16)} proposed changes. "
        "Open points are the liability cap, the data location clause and the renewal notice period.",
        "8. Effect of Termination. On termination Supplier shall make Customer Data available for export for 30 days and then delete it, except where retention is required by law.",
    ]
    state = fill(r, parts, extras, r.randint(5300, 6600))
    noul = {
        "auto_renews": N("Does the agreement renew automatically at the end of the term?"),
        "convenience_termination": N("Can the Customer terminate for convenience?"),
        "ip_uncapped": N("Are indemnification or IP infringement claims excluded from the liability cap?"),
        "mutual_indemnity": N("Do both parties give an indemnity to each other?"),
        "arbitration": N("Are disputes resolved by binding arbitration?"),
        "exclusive": N("Is the Customer restricted from using other suppliers for similar services?"),
        "free_subcontracting": N("May the Supplier subcontract without the Customer's consent?"),
        "customer_audit": N("Does the Customer have a right to audit the Supplier?"),
        "data_in_eea": N("Must Customer Data stay in the EEA or UK?"),
        "sla_credits": N("Does the contract provide service credits for missed availability?"),
        "non_solicit": N("Is there a non-solicitation clause covering employees?"),
        "free_assignment": N("Can a party assign the agreement to an affiliate without consent?"),
        "insurance_required": N("Must the Supplier maintain minimum insurance coverage?"),
        "late_interest": N("Does interest accrue on late payments?"),
        "price_increase": N("May the Supplier raise fees at renewal?"),
        "multi_year": N("Is the initial term longer than one year?"),
    }
    choice = {
        "governing_law": C("Which jurisdiction's law governs the agreement?",
                           {"new_york": None, "delaware": None, "england_wales": None, "california": None, "ontario": None}),
        "payment_terms": C("What are the invoice payment terms?", {"net_15": None, "net_30": None, "net_45": None, "net_60": None}),
        "notice_days": C("How many days' notice does the main notice period require?", {"d30": "30 days", "d60": "60 days", "d90": "90 days"}),
        "liability_cap": C("What is the general liability cap?", {"one_x": "1x annual fees", "two_x": "2x annual fees", "three_x": "3x annual fees"}),
        "customer_risk": C("Overall, how favourable is this contract to the Customer?",
                           {"favourable": None, "balanced": None, "unfavourable": "many supplier-friendly terms"}),
        "term_length": C("What is the initial term?", {"one_year": None, "two_years": None, "three_years": None, "five_years": None}),
    }
    return state, noul, choice
