"""Domain 3: insurance claims."""

from .pieces import C, CITIES, N, date, fill, money, person, yn

CLAIM_TYPES = {
    "water_damage": ("Homeowners HO-3", "A pipe under the {room} sink {how}. Water spread across the floor and into the {room2} below before the claimant shut off the main valve."),
    "auto_collision": ("Personal Auto", "The insured's {car} was struck {how} at the junction of {st1} and {st2}. The other driver {other}."),
    "theft": ("Renters HO-4", "The insured returned home to find the {entry} forced. Missing items include {items}."),
    "fire": ("Homeowners HO-3", "A fire started in the {room} {how}. The fire service attended and the {room2} sustained smoke damage."),
}


def insurance(r):
    ctype = r.choice(list(CLAIM_TYPES))
    policy_form, incident_tpl = CLAIM_TYPES[ctype]
    claimant = person(r)
    adjuster = person(r)
    ded = r.choice([250, 500, 1000, 2500])
    limit = r.choice([25000, 50000, 100000, 300000])
    est = {"auto_collision": r.randint(900, 16000), "theft": r.randint(1200, 30000)}.get(ctype, r.randint(2500, 120000))
    f = {k: r.random() < 0.5 for k in ["police", "photos", "receipts", "late_report", "prior_claims", "lapsed", "exclusion",
                                           "siu", "recorded_stmt", "mitigated", "rental", "contents", "attorney", "estimate_2", "advance"]}
    if ctype != "theft":
        f["police"] = f["police"] if ctype == "auto_collision" else False
    f["over_limit"] = est > limit
    if f["lapsed"]:
        decision = "deny"
    elif f["exclusion"]:
        decision = "partial" if r.random() < .5 else "deny"
    elif f["siu"]:
        decision = "investigate"
    elif not (f["photos"] or f["receipts"]):
        decision = "request_info"
    else:
        decision = "approve"
    days_to_report = r.randint(31, 75) if f["late_report"] else r.randint(0, 12)
    ctx = dict(room=r.choice(["kitchen", "upstairs bathroom", "laundry room"]), room2=r.choice(["living room", "garage", "basement", "hallway"]),
               how=r.choice(["failed overnight", "burst while the family was away for the weekend", "had been leaking slowly for some weeks"]) if ctype == "water_damage"
               else r.choice(["from behind while stationary", "on the passenger side", "by a vehicle running a red light"]) if ctype == "auto_collision"
               else r.choice(["after a pan of oil was left on the hob", "from a faulty extension lead", "from a candle near the curtains"]),
               car=r.choice(["2019 Honda Civic", "2021 Toyota RAV4", "2016 Ford Focus", "2022 Kia Niro"]),
               st1=r.choice(["5th Avenue", "Mill Lane", "Station Road"]), st2=r.choice(["Birch Street", "Queen Street", "Hollis Avenue"]),
               other=r.choice(["admitted fault at the scene", "left without exchanging details", "disputes the sequence of events"]),
               entry=r.choice(["back door", "ground-floor window", "garage side door"]),
               items=r.choice(["a laptop, a camera and two watches", "a bicycle, a games console and jewellery", "a television, a tablet and cash"]))
    pol = f"{dict(water_damage='HX', fire='HX', auto_collision='PA', theft='RN')[ctype]}-{r.randint(100000, 999999)}"
    header = (f"CLAIM FILE — {r.choice(['Northgate Mutual', 'Cedar & Finch Insurance', 'Bluewater General', 'Harbourline Assurance'])}\n"
              f"Claim no.: CL-{r.randint(2024000, 2024999)}    Policy: {pol} ({policy_form})\nInsured: {claimant}, {r.choice(CITIES)}\n"
              f"Adjuster: {adjuster}    Date of loss: {date(r)}    Reported {days_to_report} days after the loss")
    loss = "Description of loss\n" + incident_tpl.format(**ctx) + " " + yn(
        f["mitigated"], "The insured took reasonable steps to prevent further damage, including " +
        dict(water_damage="calling a plumber the same day and running dehumidifiers", fire="arranging emergency boarding of the broken windows",
             auto_collision="having the vehicle towed to a secure garage instead of leaving it at the roadside", theft="arranging emergency boarding of the forced entry")[ctype] + ".",
        "The file notes that no steps were taken to prevent further damage for several days after the loss was discovered.")
    cov = (f"Coverage review\nPolicy form {policy_form}. Per-occurrence limit {money(limit)}, deductible {money(ded)}. "
           + yn(f["lapsed"], f"The premium due on {date(r)} was not paid and the policy was in lapse status on the date of loss; the grace period had expired.",
                "The policy was in force on the date of loss and premiums are current.")
           + " " + yn(f["exclusion"], r.choice(["Section I exclusion 2(c) excludes damage caused by continuous or repeated seepage over 14 days or more, which may apply to part of this loss.",
                                                  "The policy excludes losses arising from business use of the vehicle, and the insured stated the car was being used for paid deliveries at the time.",
                                                  "The policy excludes theft of cash above $200 and items left in unlocked outbuildings, which may apply to part of this loss."]),
                      "No policy exclusions appear to apply based on the facts gathered so far.")
           + " " + yn(f["contents"], "Contents coverage is included and the insured has listed personal property on the claim.",
                      "Only the structure or vehicle is claimed; no personal property is included on this claim.")
           + f" Filing condition: losses must be reported within 30 days. This loss was reported after {days_to_report} days.")
    docs = ["Documents received"]
    docs.append(yn(f["photos"], f"- {r.randint(6, 40)} photographs of the damage, date-stamped", "- No photographs received; the insured says the phone used was lost"))
    docs.append(yn(f["receipts"], "- Receipts or bank statements for the major items", "- No receipts or proof of ownership provided yet"))
    docs.append(yn(f["police"], f"- Police report no. {r.randint(10000, 99999)}-{r.choice(['A', 'B', 'C'])}", "- No police report on file"))
    docs.append(yn(f["estimate_2"], f"- Two contractor or repair estimates: {money(est)} and {money(est * r.uniform(1.05, 1.4))}",
                   f"- One repair estimate for {money(est)}; a second estimate has been requested but not yet received"))
    docs.append(yn(f["recorded_stmt"], f"- Recorded statement taken by phone on {date(r)}, {r.randint(18, 55)} minutes", "- No recorded statement taken yet"))
    hist = ("Claims history and flags\n" + yn(f["prior_claims"], f"The insured has {r.randint(2, 4)} prior claims in the last five years, including a {r.choice(['water', 'theft', 'collision'])} claim in {r.randint(2019, 2023)}.",
                                                "No prior claims on record for this insured.")
            + " " + yn(f["siu"], "The file has been referred to the Special Investigations Unit because the reported values and the timeline given by the insured are inconsistent with the other evidence gathered.",
                       "No fraud indicators were identified and no SIU referral has been made.")
            + " " + yn(f["attorney"], f"The insured is represented by counsel ({person(r)}, {r.choice(['Marsh & Dell LLP', 'Kaye Legal', 'Orchard Law Group'])}); all contact must go through the attorney.",
                       "The insured is not represented by an attorney."))
    notes = [f"Adjuster notes ({adjuster.split()[0]})"]
    note_pool = [
            "Left voicemail for insured requesting missing documents.",
            "Insured called back, stressed about timeline, explained next steps and expected turnaround.",
            "Inspection completed; damage observed is consistent with the reported cause of loss.",
            "Reviewed estimate line items; labour rate appears above regional average, flagged for desk review.",
            "Spoke with contractor to confirm scope; confirmed no pre-existing damage visible in photos.",
            "Checked underwriting file for endorsements; none relevant to this loss.",
            "Supervisor reviewed reserve and agreed with current figure.",
            "Emailed insured a summary of what the policy covers and what is still outstanding.",
            "Requested the loss history report from the industry database; results consistent with file.",
            "Insured asked about the deductible; explained it is applied once per occurrence.",
            "Diary set for 14 days to chase outstanding items.",
            "Contractor asked to itemise labour and materials separately on the revised estimate.",
        ]
    r.shuffle(note_pool)
    for i, note in enumerate(note_pool[:r.randint(6, 9)]):
        notes.append(f"Day {i * 3 + r.randint(1, 3)} — {note}")
    pay = "Payments\n" + yn(f["rental"], f"Temporary {'rental car' if ctype == 'auto_collision' else 'accommodation'} authorised at {money(r.randint(40, 160))} per day for up to {r.randint(7, 30)} days.",
                            "No additional living expense or rental benefit has been requested or authorised.") + " " + yn(
        f["advance"], f"An advance payment of {money(r.randint(5, 30) * 100)} was issued on {date(r)} to cover emergency costs.", "No advance payment has been made.")
    reserve = f"Current reserve: {money(est * 1.1)}. Estimated loss {money(est)} against a per-occurrence limit of {money(limit)}."
    stmt_by_type = {
        "water_damage": ["I noticed the floor was soft near the cabinet a few days before, but I thought it was just a spill.",
                         "When I opened the cabinet the pipe was spraying and the bottom shelf was soaked through.",
                         "My neighbour helped me find the stopcock because I had never used it before.",
                         "The ceiling in the room below has a brown stain about the size of a dinner plate and the plaster is bulging."],
        "auto_collision": ["I was waiting at the lights with my indicator on when I felt the impact.",
                           "There were two witnesses at the bus stop and one of them gave me their phone number.",
                           "The car was drivable but the rear bumper was hanging off and the boot would not close.",
                           "I went to urgent care the next morning because my neck was stiff, but I have not claimed for that."],
        "theft": ["The door frame was splintered and the lock was lying on the floor.",
                  "I called the non-emergency number first and they told me to come to the station to make a report.",
                  "My landlord has since replaced the lock and added a second bolt.",
                  "Some of the jewellery belonged to my grandmother, so I don't have receipts for it, but there are family photos showing it."],
        "fire": ["The smoke alarm went off and I got the children out before calling 911.",
                 "I tried to use the extinguisher but it was empty, I didn't know it needed servicing.",
                 "The firefighters were there for about forty minutes and ventilated the house afterwards.",
                 "Everything upstairs smells of smoke, including the clothes in the wardrobes."],
    }
    stmt = "Insured's account (summarised from first notice of loss)\n" + " ".join(r.sample(stmt_by_type[ctype], 3)) + \
        f" The insured reported the loss by {r.choice(['phone', 'the mobile app', 'email to their agent'])} and asked how long the process would take."
    items = {"water_damage": ["Remove and replace damaged base cabinets", "Drywall repair and repaint, lower level ceiling", "Dehumidifier and air mover rental, 4 days", "Flooring replacement, laminate", "Plumbing repair, supply line and valve"],
             "auto_collision": ["Rear bumper cover, replace", "Boot lid, repair and refinish", "Tail lamp assembly, left", "Blend adjacent panels", "Four-wheel alignment"],
             "theft": ["Laptop, 2022 model, replacement cost", "Door frame and lock replacement", "Camera body and lens", "Jewellery (valuation pending)", "Games console and controllers"],
             "fire": ["Smoke remediation, whole house", "Kitchen cabinets and worktop replacement", "Electrical inspection and rewiring, one circuit", "Contents cleaning, soft furnishings", "Repaint, two rooms and hallway"]}[ctype]
    shares = [r.random() + 0.3 for _ in items]
    line_items = "Estimate line items (primary estimate)\n" + "\n".join(
        f"- {it}: {money(est * sh / sum(shares))}" for it, sh in zip(items, shares))
    parts = [header, loss, stmt, cov, "\n".join(docs), line_items, hist, "\n".join(notes), pay, reserve]
    extras = [
        "Claim handling standards: acknowledge within 2 business days, begin investigation within 5, and accept or deny within 40 days of receiving proof of loss "
        "unless further investigation is documented. Any denial letter must cite the specific policy language relied on.",
        f"Weather check: the national weather service reported {r.choice(['freezing temperatures', 'heavy rain', 'no unusual weather', 'high winds'])} in the insured's area on the date of loss. "
        "This information is recorded for context and is not by itself a basis for coverage decisions.",
        f"Vendor assignments: mitigation vendor {r.choice(['DryRight Services', 'RapidRestore', 'none assigned'])}; appraiser {person(r)}; "
        f"salvage {r.choice(['not applicable', 'to be arranged after inspection'])}. Vendor invoices must reference the claim number.",
        "Customer communication preference: the insured asked for updates by email and said they are unavailable on weekday mornings due to shift work. "
        "They also asked whether the claim will affect their renewal premium; adjuster explained this is an underwriting decision.",
        f"Subrogation review: {r.choice(['potential recovery from the other driver’s insurer', 'potential recovery from the plumbing contractor who installed the fitting', 'no obvious third party for recovery'])}. "
        "The subrogation unit will review once payment is made.",
        f"Depreciation note: contents are settled at actual cash value until replaced, then the withheld depreciation (typically {r.randint(10, 35)}% for electronics "
        "and furniture) can be recovered with proof of replacement within 180 days. Building repairs are paid at replacement cost less the deductible.",
        f"Reserve history: initial reserve set automatically at first notice of loss; revised on day {r.randint(3, 9)} after the first estimate arrived. "
        "Any reserve change above $10,000 requires supervisor sign-off, which is recorded in the financial log rather than in these notes.",
        "Desk review checklist: coverage confirmed, deductible applied, limits checked, depreciation applied to contents at the standard schedule, "
        "photos matched to estimate line items, and all correspondence saved to the file.",
    ]
    state = fill(r, parts, extras, r.randint(4900, 5900))
    noul = {
        "police_report": N("Is a police report on file for this claim?"),
        "photos_received": N("Has the insurer received photographs of the damage?"),
        "receipts_received": N("Has proof of ownership such as receipts been provided?"),
        "reported_late": N("Was the loss reported later than the 30-day filing condition?"),
        "prior_claims": N("Does the insured have prior claims in the last five years?"),
        "policy_lapsed": N("Was the policy lapsed on the date of loss?"),
        "exclusion_applies": N("Does the file identify a policy exclusion that may apply?"),
        "siu_referral": N("Has the claim been referred to the Special Investigations Unit?"),
        "recorded_statement": N("Has a recorded statement been taken from the insured?"),
        "mitigation_done": N("Did the insured take steps to prevent further damage?"),
        "rental_authorized": N("Has a rental car or temporary accommodation been authorised?"),
        "contents_claimed": N("Is personal property or contents included in the claim?"),
        "has_attorney": N("Is the insured represented by an attorney?"),
        "two_estimates": N("Have two separate repair estimates been received?"),
        "advance_paid": N("Has an advance payment been issued?"),
        "over_limit": N("Does the estimated loss exceed the per-occurrence limit?"),
    }
    choice = {
        "claim_type": C("What type of loss is this claim for?", {"water_damage": None, "auto_collision": None, "theft": None, "fire": None}),
        "recommended_decision": C("What should the next claim decision be?",
                                  {"approve": "covered and documented", "partial": "partly excluded", "deny": "not covered",
                                   "investigate": "fraud review pending", "request_info": "key documents missing"}),
        "deductible": C("What is the policy deductible?", {"d250": "$250", "d500": "$500", "d1000": "$1,000", "d2500": "$2,500"}),
        "policy_form": C("Which policy form applies?", {"homeowners": "HO-3", "renters": "HO-4", "auto": "personal auto"}),
        "loss_size": C("How large is the estimated loss?", {"small": "under $5,000", "medium": "$5,000 to $25,000", "large": "over $25,000"}),
        "contact_route": C("Who should the adjuster contact about this claim?", {"insured": "insured directly", "attorney": "insured's attorney"}),
    }
    return state, noul, choice
