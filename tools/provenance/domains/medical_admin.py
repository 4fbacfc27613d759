"""Domain 7: medical-admin triage notes (administrative, non-diagnostic)."""

from .pieces import C, LAST, MONTHS, N, date, fill, money, person, yn

def medical_admin(r):
    clinic = r.choice(["Riverside Family Practice", "Oakmont Community Clinic", "Lakeshore Orthopaedic Outpatients", "St. Brigid's Outpatient Centre"])
    pt = person(r)
    coord = person(r)
    appt = r.choice(["new_patient", "follow_up", "specialist_referral", "imaging", "telehealth"])
    urgency = r.choice(["routine", "soon", "same_day"])
    f = {k: r.random() < 0.5 for k in ["ins_verified", "referral_needed", "referral_on_file", "interpreter", "transport", "guardian", "records_requested",
                                           "prior_auth", "noshow_history", "portal", "copay_collected", "mobility", "consent_signed", "waitlist", "balance_due"]}
    if not f["referral_needed"]:
        f["referral_on_file"] = False
    lang = r.choice(["Spanish", "Polish", "Vietnamese", "Arabic", "Portuguese"])
    age = r.randint(4, 88)
    if age < 18:
        f["guardian"] = True
    header = (f"{clinic} — Scheduling & Intake Note (administrative)\nPatient: {pt}    Age: {age}    MRN: {r.randint(1000000, 9999999)}\n"
              f"Coordinator: {coord}    Date: {date(r)}    Requested visit type: {appt.replace('_', ' ')}\n"
              "This note records administrative information only. It contains no clinical assessment.")
    reason = ("Reason for contact\n" + r.choice([
        "Caller asked to book the next available appointment after the GP suggested a follow-up visit.",
        "Patient's daughter called to arrange an appointment and asked about parking and wheelchair access.",
        "Patient requested a telehealth slot because they are working away from home this month.",
        "Referral received by fax from an outside provider; patient contacted to schedule.",
        "Patient called to reschedule a missed appointment and asked whether there is a fee.",
    ]) + f" Clinician-set urgency on the referral or request form: {urgency.replace('_', ' ')}.")
    ins = ("Insurance and billing\n" + f"Payer: {r.choice(['BlueHarbor PPO', 'Medicare Part B', 'Medicaid managed care', 'Self-pay', 'United Crest HMO'])}. "
           + yn(f["ins_verified"], f"Eligibility verified electronically on {date(r)}; coverage active.", "Eligibility could not be verified; the payer portal returned 'member not found' and the patient will bring their card.")
           + " " + yn(f["prior_auth"], "The requested service requires prior authorisation; request submitted, decision pending.", "No prior authorisation is required for this visit type.")
           + " " + yn(f["copay_collected"], f"Copay of {money(r.choice([20, 25, 40, 50]))} collected by card over the phone.", "Copay will be collected at check-in.")
           + " " + yn(f["balance_due"], f"Outstanding balance of {money(r.randint(40, 900))} from a previous visit; patient informed and offered a payment plan.", "No outstanding balance."))
    ref = ("Referral\n" + yn(f["referral_needed"], "The patient's plan requires a referral from the primary care provider for this visit. "
                             + yn(f["referral_on_file"], "A valid referral is on file (expires in 90 days).", "No referral is on file yet; a request has been sent to the PCP office."),
                             "No referral is required for this visit under the patient's plan."))
    access = ["Access and communication needs"]
    access.append(yn(f["interpreter"], f"- {lang} interpreter requested for the visit; booked through the language line.", "- No interpreter needed; patient prefers English."))
    access.append(yn(f["transport"], "- Patient needs transport assistance; non-emergency medical transport requested through the plan.", "- Patient will arrange their own transport."))
    access.append(yn(f["mobility"], "- Patient uses a wheelchair; ground-floor room and accessible parking noted.", "- No mobility assistance needed."))
    access.append(yn(f["guardian"], f"- Parent or legal guardian ({person(r)}) must attend and sign consent forms.", "- Patient is an adult and attends independently."))
    access.append(yn(f["portal"], "- Patient is enrolled in the patient portal; confirmation sent there and by SMS.", "- Patient is not enrolled in the portal; confirmation to be sent by post."))
    admin = ["Administrative status"]
    admin.append(yn(f["records_requested"], f"- Records requested from {r.choice(['Westfield Medical Group', 'an out-of-state hospital', 'the previous dentist', 'the school nurse office'])}; not yet received.", "- No outside records are needed."))
    admin.append(yn(f["consent_signed"], "- Registration and privacy consent forms signed electronically.", "- Registration and consent forms still need to be signed."))
    admin.append(yn(f["noshow_history"], f"- {r.randint(2, 4)} missed appointments in the last 12 months; reminder call scheduled two days before.", "- No missed appointments on record."))
    admin.append(yn(f["waitlist"], "- Added to the cancellation waitlist for an earlier slot.", "- Not on the waitlist; the offered slot was accepted."))
    slot_days = {"same_day": 0, "soon": r.randint(2, 6), "routine": r.randint(10, 40)}[urgency]
    sched = (f"Scheduling outcome\nAppointment booked in {slot_days} days" + (" (today)" if slot_days == 0 else "") +
             f" with {r.choice(['Dr. ' + r.choice(LAST), 'the nurse practitioner', 'the physiotherapy team', 'the imaging department'])} at {r.randint(8, 16)}:{r.choice(['00', '15', '30', '45'])}.")
    call = ["Call log"]
    pool = ["Outbound call, no answer; voicemail left with callback number.", "Patient returned call; verified name and date of birth.",
            "Confirmed address and phone number; email updated.", "Explained cancellation policy (24 hours notice).",
            "Sent pre-visit questionnaire link.", "Patient asked about parking; directions sent.", "Transferred to billing for a payment question; returned to scheduling.",
            "Checked provider calendar for a slot matching the patient's work hours."]
    r.shuffle(pool)
    hh = r.randint(8, 12)
    for i, p in enumerate(pool[:r.randint(6, 8)]):
        call.append(f"{hh + i // 2}:{r.randint(0, 59):02d} {p}")
    msg = ("Portal / voicemail message from patient (verbatim)\n\"" + " ".join(r.sample([
        "Hi, this is about the appointment I was told to book.", "I work shifts so mornings are really hard for me, afternoons after two are better.",
        "I'm not sure if my insurance changed in January, my employer switched plans.", "Can you tell me if I need to bring anything, like my old scans or a list of tablets?",
        "Last time I waited over an hour so I'd like the first slot of the session if possible.", "My phone number has changed, please use the new one I gave on the form.",
        "If there's a cancellation sooner I can come in at short notice.", "I'd rather not have a video appointment, my internet at home isn't reliable."], 4)) + "\"")
    hist = ["Recent appointment history"]
    for _ in range(r.randint(3, 5)):
        hist.append(f"- {date(r, r.choice([2023, 2024]))}: {r.choice(['office visit', 'lab draw', 'telehealth', 'physiotherapy', 'imaging'])}, "
                    f"status {r.choice(['attended', 'attended', 'attended', 'cancelled by patient', 'rescheduled by clinic'])}")
    if f["noshow_history"]:
        hist.append(f"- {date(r)}: office visit, status no-show")
    checklist = ("Pre-visit checklist\n[" + yn(f["ins_verified"], "x", " ") + "] insurance verified\n[" + yn(f["consent_signed"], "x", " ") + "] consent forms signed\n["
                 + yn(not f["referral_needed"] or f["referral_on_file"], "x", " ") + "] referral requirement satisfied\n[" + yn(not f["prior_auth"], "x", " ")
                 + "] authorisation complete or not required\n[" + yn(not f["records_requested"], "x", " ") + "] outside records received or not required")
    parts = [header, reason, msg, ins, ref, "\n".join(access), "\n".join(admin), "\n".join(hist), sched, checklist, "\n".join(call)]
    extras = [
        "Scheduling rules: same-day requests go to the duty slot list; 'soon' requests must be offered a slot within 7 days; routine requests within 6 weeks. "
        "Coordinators must not assess symptoms; any clinical question is transferred to the nurse line.",
        "Privacy reminder: confirm two identifiers before discussing appointments. Do not leave appointment details on voicemail beyond the clinic name and callback number.",
        f"Front desk notes: the {clinic} car park is under construction until {r.choice(MONTHS)}; patients should use the side entrance. "
        "The lift to the second floor is out of service on weekday mornings for maintenance.",
        f"Clinic capacity this week: {r.randint(60, 98)}% of slots booked; {r.randint(0, 12)} same-day slots remaining; the imaging department is running about {r.randint(0, 45)} minutes behind.",
        "Patient communication preferences: text messages for reminders, phone calls for changes, letters only if no mobile number is available.",
        "Quality note: the intake template was updated this month to include transport and interpreter questions at the start of the call instead of at the end.",
        "Cancellation policy: appointments cancelled with less than 24 hours' notice, or missed without notice, may incur a $35 fee after the second occurrence. "
        "The fee is waived for documented emergencies and for patients on Medicaid plans.",
        f"Coordinator handover: {coord.split()[0]} is off tomorrow; any callbacks about this booking go to the shared scheduling inbox, which is checked at 9:00, 12:00 and 15:30.",
        "Telehealth requirements: a device with a camera, a stable connection, and a private space. The link is sent 30 minutes before the appointment. "
        "Patients who cannot connect within 10 minutes are offered a phone consultation or a rebooked slot.",
        "Forms sent: new patient registration, medication list (to be completed by the patient), and the notice of privacy practices. Forms can be completed online or on paper at check-in.",
    ]
    state = fill(r, parts, extras, r.randint(4900, 5900))
    noul = {
        "insurance_verified": N("Was the patient's insurance eligibility verified?"),
        "referral_required": N("Does the patient's plan require a referral for this visit?"),
        "referral_on_file": N("Is a valid referral already on file?"),
        "interpreter": N("Was an interpreter requested for the visit?"),
        "transport_help": N("Does the patient need transport assistance?"),
        "guardian_needed": N("Must a parent or guardian attend the visit?"),
        "records_pending": N("Are outside records requested but not yet received?"),
        "prior_auth_pending": N("Is a prior authorisation request pending?"),
        "missed_appts": N("Does the patient have missed appointments in the last year?"),
        "portal_enrolled": N("Is the patient enrolled in the patient portal?"),
        "copay_collected": N("Was the copay already collected?"),
        "wheelchair": N("Does the patient need wheelchair or mobility accommodations?"),
        "consent_signed": N("Have the registration and consent forms been signed?"),
        "on_waitlist": N("Was the patient added to the cancellation waitlist?"),
        "balance_due": N("Does the patient have an outstanding balance from a previous visit?"),
        "is_minor": N("Is the patient under 18 years old?"),
    }
    choice = {
        "visit_type": C("What type of visit was requested?", {"new_patient": None, "follow_up": None, "specialist_referral": None, "imaging": None, "telehealth": None}),
        "urgency": C("What urgency was set on the request?", {"routine": None, "soon": "within 7 days", "same_day": None}),
        "blocking_item": C("What administrative item most needs action before the visit?",
                           {"none": None, "insurance": "eligibility unverified", "referral": "referral missing", "authorisation": "prior auth pending", "forms": "consent forms unsigned"}),
        "confirmation_channel": C("How will the appointment confirmation be sent?", {"portal_and_sms": None, "post": "by letter"}),
        "payer_kind": C("What kind of payer covers the visit?", {"commercial": "PPO or HMO", "medicare": None, "medicaid": None, "self_pay": None}),
        "language_support": C("What language support is needed?", {"none": None, "spanish": None, "other_language": None}),
    }
    return state, noul, choice
