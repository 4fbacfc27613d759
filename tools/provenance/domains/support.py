"""Domain 1: customer support transcripts."""

from .pieces import C, CITIES, FIRST, N, WEEKDAYS, date, fill, money, person, yn

PRODUCTS = [
    ("Fluxwave", "Fluxwave AX3000 mesh router", "home_networking"),
    ("Ledgerly", "Ledgerly Small Business accounting subscription", "software_subscription"),
    ("Brightcart", "Brightcart weekly meal-kit plan", "consumer_goods"),
    ("Nimbus Drive", "Nimbus Drive Plus 2 TB cloud storage plan", "software_subscription"),
    ("Orbit Home", "Orbit T6 smart thermostat", "smart_home"),
    ("Trailpeak", "Trailpeak e-bike model R2", "consumer_goods"),
    ("Sonara", "Sonara noise-cancelling headphones (gen 4)", "consumer_electronics"),
]

ISSUE_OPEN = {
    "billing": [
        "I was charged twice this month for {product}. My bank statement shows two identical payments of {amt} on the {d1} and the {d2}.",
        "My invoice went up from {amt0} to {amt} without any warning. Nobody told me the price was changing and I never upgraded anything.",
    ],
    "technical": [
        "Since the last update my {product} keeps dropping out. It works for maybe twenty minutes and then everything just stops until I restart it.",
        "The {product} won't finish setup. It gets to the final step, shows a spinning icon for ages and then says 'Something went wrong, error E-{code}'.",
    ],
    "account_access": [
        "I can't log into my {company} account. It says my password is wrong, I reset it, and now the reset link says it has expired even though I clicked it straight away.",
        "Somebody changed the email on my {company} account. I got a notification about it last night and now I'm locked out completely.",
    ],
    "shipping": [
        "My order was supposed to arrive on the {d1} and the tracking hasn't moved in six days. It just says 'label created'.",
        "The parcel arrived but the box was crushed and the {product} inside is damaged. One corner is cracked and it rattles when I pick it up.",
    ],
}

TROUBLESHOOT = {
    "billing": [
        ("Can you tell me the last four digits of the card that was charged?", "It ends in {last4}. It's a Visa."),
        ("I can see the two transactions on our side. One of them shows as 'pending authorization' and the other as 'settled'.", "So is one of them going to disappear by itself or do I have to chase it?"),
        ("Our billing system moved everyone on the legacy plan to the new pricing on the 1st. There should have been an email thirty days before.", "I never got that email. I check that inbox every day."),
        ("I'm checking whether a promotional rate was applied to your account when you signed up.", "I did sign up during the spring sale, yes. It was supposed to be locked in for a year."),
        ("Would you like me to send you an itemized statement for the last three billing periods?", "Yes please, that would help me show it to my accountant."),
    ],
    "technical": [
        ("Could you tell me which firmware version is shown under Settings, then About?", "It says version {fw}."),
        ("Let's try a power cycle first. Unplug it for thirty seconds, then plug it back in and wait for the light to turn solid white.", "Okay, done. The light is blinking amber now, not white."),
        ("Blinking amber usually means it can't reach our update server. Is anything else on your network working right now?", "My laptop is fine on the old network, it's just this device."),
        ("Please open the app, go to Diagnostics and tap 'Send report'. It will give you a six-character code.", "The code is {diag}."),
        ("Thanks. I can see in the diagnostic report that the device rebooted {reboots} times in the last 24 hours.", "That sounds about right. It's been driving me mad."),
        ("Could you try moving it closer to the main unit, within about ten metres, just as a test?", "I moved it to the hallway. Still the same problem after a few minutes."),
    ],
    "account_access": [
        ("For security I need to verify a couple of details. Can you confirm the postcode on the account?", "It's the one for my flat in {city}, I can give you the full address if needed."),
        ("I've sent a one-time code to the phone number we have on file. Could you read it back to me?", "Got it, it's {otp}."),
        ("I can see a login from a new device in {city2} yesterday evening. Was that you?", "No, I've never been there. That definitely wasn't me."),
        ("I'm going to sign out all active sessions and lock the email change until we've confirmed your identity.", "Good, please do. What about my saved payment details?"),
        ("Your saved cards are masked and cannot be viewed in full by anyone who logs in, but I'd still recommend watching your statement.", "Okay. I'll keep an eye on it."),
    ],
    "shipping": [
        ("Can you confirm the delivery address we should have on the order?", "It's {num} {street}, {city}. The postcode is correct on the confirmation email."),
        ("The carrier's system shows the parcel was scanned at their depot but never loaded onto a van.", "So it's just sitting in a warehouse somewhere?"),
        ("Could you send a photo of the outer box and the damaged item? You can reply to the confirmation email with attachments.", "I've just sent three photos, one of the box and two of the crack."),
        ("I've received the photos, thank you. The damage is clearly from transit.", "Yes, the box was half flattened when the driver handed it over."),
        ("I've opened a trace with the carrier. They normally respond within two working days.", "Two more days? I needed this for the weekend."),
    ],
}

GENERIC_TURNS = [
    ("Is there anything else on the account you'd like me to look at while I have it open?", "Not really, I just want this sorted."),
    ("Just to set expectations, I'm going to put a short note on the account summarising today's conversation.", "Fine, as long as the next person actually reads it."),
    ("I'll stay on the line while the system updates, it can take a minute.", "Okay, I'll wait."),
    ("Could you confirm the best email address to send the summary to?", "Use the same one that's on the account."),
]


def support_chat(r):
    company, product, category = r.choice(PRODUCTS)
    issue = r.choice(list(ISSUE_OPEN))
    channel = r.choice(["chat", "phone", "email"])
    tone = r.choice(["calm", "frustrated", "angry"])
    cust = person(r)
    agent = r.choice(FIRST)
    supervisor = person(r)
    f = {k: r.random() < 0.5 for k in ["refund", "order", "escalated", "resolved", "cancel", "discount",
                                           "prior", "callback", "competitor", "ticket", "survey", "multi",
                                           "apology", "card_leak"]}
    f["verified"] = r.random() < 0.6
    if f["escalated"]:
        f["resolved"] = False
    if f["resolved"]:
        f["callback"] = False
    if f["escalated"]:
        next_step = "supervisor_callback" if f["callback"] else "engineering_ticket"
    elif f["resolved"]:
        next_step = {"billing": "refund_processing", "shipping": "replacement_shipment"}.get(issue, "no_action")
    else:
        next_step = "engineering_ticket" if issue == "technical" else "no_action"
    priority = {"angry": "high", "frustrated": "medium", "calm": "low"}[tone]
    if f["escalated"]:
        priority = "high"
    amt = r.randint(19, 240) + 0.99
    ctx = dict(product=product, company=company, amt=money(amt), amt0=money(amt - r.randint(5, 15)),
               d1=f"{r.randint(2, 14)}th", d2=f"{r.randint(15, 28)}th", code=r.randint(100, 999),
               last4=r.randint(1000, 9999), fw=f"{r.randint(2, 5)}.{r.randint(0, 9)}.{r.randint(10, 99)}",
               diag="".join(r.choice("ABCDEFGHJKMNPQRSTUVWXYZ23456789") for _ in range(6)),
               reboots=r.randint(6, 31), city=r.choice(CITIES), city2=r.choice(CITIES),
               otp=r.randint(100000, 999999), num=r.randint(2, 240),
               street=r.choice(["Alder Road", "Kingsway", "Maple Court", "Harbour Street", "Elm Terrace"]))
    hh, mm = r.randint(8, 19), r.randint(0, 50)

    def ts():
        nonlocal hh, mm
        mm += r.randint(0, 3)
        if mm >= 60:
            hh, mm = hh + 1, mm - 60
        return f"[{hh:02d}:{mm:02d}]" if channel != "email" else ""

    lines = []
    A = lambda s: lines.append(f"{ts()} Agent ({agent}): {s}".strip())
    U = lambda s: lines.append(f"{ts()} Customer ({cust.split()[0]}): {s}".strip())
    ch_label = {"chat": "Live chat", "phone": "Phone call (auto-transcribed)", "email": "Email thread (merged view)"}[channel]
    header = (f"{company} Customer Care — interaction record\nChannel: {ch_label}\nCustomer: {cust}\n"
              f"Assigned agent: {agent} (Tier 1)\nQueue: {issue.replace('_', ' ').title()}\nDate: {date(r)}")
    A(f"Hi, thanks for contacting {company} support, my name is {agent}. How can I help you today?")
    opener = r.choice(ISSUE_OPEN[issue]).format(**ctx)
    if tone == "angry":
        opener += " Honestly this is ridiculous and I'm losing patience with your company."
    elif tone == "frustrated":
        opener += " I'm pretty frustrated, I've already lost a fair bit of time on this."
    else:
        opener += " Hopefully it's something simple."
    U(opener)
    if f["prior"]:
        U(f"I already contacted you about this {r.choice(['last week', 'twice before', 'on Monday'])} and was told it would be fixed. Nothing happened.")
    else:
        U("This is the first time I've reached out about it, I was hoping it would sort itself out.")
    if f["apology"]:
        A("I'm really sorry about the trouble this has caused you. Let me take a look right away.")
    else:
        A("Okay, let me take a look at that for you.")
    if f["verified"]:
        A("Before I open the account, can you confirm your full name and the email address on file? I'll also send a verification code.")
        U(f"{cust}, and the email is {cust.split()[0].lower()}.{cust.split()[1].lower().replace(chr(39), '')}@{r.choice(['gmail.com', 'outlook.com', 'fastmail.com'])}.")
        A("Thank you, the code matches. Your identity is verified and I can see the account now.")
    else:
        A("I'll look this up using the details in your message. I haven't been able to run the usual verification step, so I can only share general information for now.")
    if f["order"]:
        U(f"In case it helps, the order number is {company[:2].upper()}-{r.randint(1000000, 9999999)}.")
        A("Perfect, that's the one I've got up.")
    else:
        A("Do you happen to have an order or account number handy?")
        U("Not on me, sorry. I'm not at home right now. Can't you find it with my name?")
        A("I'll search with your name and email instead, that should work.")
    steps = list(TROUBLESHOOT[issue])
    n_steps = r.randint(3, len(steps))
    keep = sorted(r.sample(range(len(steps)), n_steps))
    for a, u in [steps[i] for i in keep]:
        A(a.format(**ctx))
        U(u.format(**ctx))
    if f["card_leak"]:
        U(f"If you need the card it's 4{r.randint(100, 999)} {r.randint(1000, 9999)} {r.randint(1000, 9999)} {ctx['last4']}, expiry 0{r.randint(1, 9)}/2{r.randint(6, 9)}.")
        A("Please don't share full card numbers here, I'll ask for the message to be redacted. I only ever need the last four digits.")
    if f["multi"]:
        U(r.choice([
            "While I have you, the mobile app also logs me out every single time I close it. That's a separate thing I think.",
            "Also, my loyalty points from the last two orders never showed up. Can you check that too?",
            "One more thing, I changed my address in the app last month but the invoices still show the old one.",
        ]))
        A("I'll note that as a separate item so it doesn't get lost.")
    if f["competitor"]:
        U(r.choice(["A friend of mine uses a different provider and says they never have these problems. I'm seriously considering switching.",
                    f"Honestly {r.choice(['Vantix', 'Corvel', 'Hearthline', 'Zephra'])} is offering a better deal right now and I'm tempted."]))
    if f["cancel"]:
        U("If this isn't fixed today I want to cancel my subscription. I'm not paying for something that doesn't work.")
        A("I understand. Let's see what I can do before it comes to that.")
    if f["refund"]:
        U("I'd also like a refund for the period this has been broken, or at least a credit on my account.")
    gt = list(GENERIC_TURNS)
    r.shuffle(gt)
    for a, u in gt[:r.randint(1, 3)]:
        A(a)
        U(u)
    if f["discount"]:
        A(f"As a goodwill gesture I've applied a {r.choice(['15%', '20%', 'one-month', '25%'])} credit to your next bill. You'll see it on the next invoice.")
        U("Okay, that's something at least.")
    elif f["refund"]:
        A("I'm not able to issue a refund or credit from my side for this type of case, I'm afraid.")
    if f["escalated"]:
        A(f"This needs a specialist to look at it, so I'm escalating it to my supervisor, {supervisor}, and the {dict(billing='billing operations', technical='device engineering', account_access='trust and safety', shipping='logistics escalations')[issue]} team.")
    if f["ticket"]:
        A(f"Your case reference is CS-{r.randint(200000, 999999)}. Please quote it if you contact us again.")
    if f["callback"]:
        A(f"Someone will call you back on {r.choice(WEEKDAYS[:5])} between {r.choice(['9 and 11 am', '1 and 3 pm', '4 and 6 pm'])} with an update.")
        U("Fine. Please make sure they actually call.")
    if f["resolved"]:
        A("I can see the change has gone through on our side. Can you confirm everything looks right now?")
        U("Yes, it looks correct now. Thanks for sorting it out.")
    else:
        A("I'm afraid I can't fully fix this today. The issue will stay open until we have an update.")
        U("So it's still not fixed. Great." if tone != "calm" else "Okay, I understand. I'll wait to hear back.")
    if f["survey"]:
        A("After this conversation you'll receive a short survey about your experience. We'd really appreciate your feedback.")
    A(f"Thanks for your patience, {cust.split()[0]}. Have a good rest of your day.")
    transcript = "Transcript:\n" + "\n".join(lines)
    notes = (f"Agent wrap-up notes: Customer contacted us about an issue in the {issue.replace('_', ' ')} category with the {product}. "
             f"Customer tone assessed as {tone}. Resolution status: {'resolved' if f['resolved'] else 'open'}. "
             f"Escalated: {'yes' if f['escalated'] else 'no'}.")
    extras = [
        f"Account summary: {cust} has been a {company} customer since {r.randint(2016, 2023)}. Plan: {product}. "
        f"Payment method: card ending {ctx['last4']}. Lifetime orders: {r.randint(1, 40)}. Open tickets before this contact: {r.randint(1, 3) if f['prior'] else 0}. "
        f"Marketing preferences: {r.choice(['opted out of all marketing', 'email only', 'email and SMS'])}.",
        f"Knowledge base articles the agent had open: KB-{r.randint(1000, 9999)} '{r.choice(['Resolving duplicate charges', 'Firmware update failures', 'Account recovery checklist', 'Lost or delayed parcels'])}', "
        f"KB-{r.randint(1000, 9999)} 'When to escalate to Tier 2', KB-{r.randint(1000, 9999)} 'Goodwill credit limits by tenure'. "
        "The goodwill article says Tier 1 agents may apply credits of up to one month's fee without approval; anything larger needs a team lead.",
        "Quality review rubric (for reference): greet and introduce yourself, verify identity before discussing account-specific data, restate the problem, "
        "set expectations on timelines, avoid promising outcomes you cannot control, offer a reference number, and close with a summary of next steps.",
        f"Previous interaction summary: {yn(f['prior'], 'An earlier contact about the same issue was closed as resolved by another agent without confirmation from the customer.', 'No previous interactions on this topic are recorded for this customer.')} "
        f"The customer's CSAT history shows scores of {r.randint(1, 5)}, {r.randint(1, 5)} and {r.randint(1, 5)} out of 5 on the last three surveys.",
        f"System events during the contact: payment gateway latency {r.randint(80, 900)} ms; CRM sync delayed by {r.randint(1, 12)} minutes; "
        f"no platform-wide outage was declared at the time. Queue wait time before connection: {r.randint(1, 38)} minutes.",
        f"Customer profile notes: prefers {r.choice(['short written summaries', 'phone follow-ups', 'email only'])}; "
        f"{r.choice(['has accessibility needs recorded (large-print invoices)', 'no special handling flags', 'account flagged for VIP handling after a 2023 complaint'])}. "
        f"Region: {ctx['city']}. Language: English. Household accounts linked: {r.randint(0, 3)}.",
        f"Internal policy excerpt (returns and refunds, v{r.randint(3, 7)}.{r.randint(0, 9)}): refunds for service outages are calculated pro rata from the date the customer first reported the fault. "
        "Hardware damaged in transit is replaced free of charge if reported within 14 days with photos. Duplicate charges are reversed automatically "
        "within 5 to 7 business days once the pending authorisation expires; agents should not issue a manual refund for a pending charge.",
        f"Sentiment analysis (automated): opening message scored {r.uniform(-0.9, 0.4):.2f}, closing message scored {r.uniform(-0.6, 0.8):.2f}. "
        f"Keywords detected: {', '.join(r.sample(['refund', 'cancel', 'broken', 'password', 'charged', 'tracking', 'update', 'locked', 'damaged', 'invoice'], 4))}. "
        "Note that automated sentiment is advisory only and should not replace the agent's own assessment.",
        f"Handling time breakdown: talk or typing time {r.randint(6, 24)} min, hold time {r.randint(0, 9)} min, after-contact work {r.randint(2, 11)} min. "
        f"Target handling time for this queue is {r.choice([12, 15, 18])} minutes; contacts above target are sampled for coaching, not penalised.",
        "Team lead comment: please make sure wrap-up notes mention whether the customer raised cancellation, since retention is tracking this month, "
        "and tag any mention of competitors with the 'churn-risk' label so the retention team can follow up.",
    ]
    state = fill(r, [header, transcript, notes], extras, r.randint(4900, 5800))
    noul = {
        "refund_requested": N("Did the customer explicitly ask for a refund or account credit?"),
        "order_number_given": N("Did the customer provide an order or account number?"),
        "escalated": N("Was the case escalated to a supervisor or specialist team?"),
        "resolved": N("Was the issue fully resolved by the end of the conversation?"),
        "cancel_threat": N("Did the customer threaten to cancel their subscription or service?"),
        "goodwill_offered": N("Did the agent offer a discount, credit or other goodwill gesture?"),
        "identity_verified": N("Did the agent verify the customer's identity before discussing account details?"),
        "prior_contact": N("Does the customer say they contacted support about this issue before?"),
        "callback_set": N("Was a callback or follow-up contact scheduled with the customer?"),
        "competitor_mention": N("Did the customer mention a competitor or switching providers?"),
        "case_ref_shared": N("Did the agent give the customer a case or ticket reference number?"),
        "agent_apologized": N("Did the agent apologize to the customer for the trouble?"),
        "survey_offered": N("Was the customer told they would receive a satisfaction survey?"),
        "multiple_issues": N("Did the customer raise more than one distinct problem?"),
        "card_number_shared": N("Did the customer paste a full payment card number into the conversation?",
                                {"true": "full card number appears", "false": "only last four digits or none"}),
        "churn_risk": N("Should this contact be tagged churn-risk per the team lead's rule?",
                        {"true": "cancellation or competitor mentioned", "false": "neither mentioned"}),
    }
    choice = {
        "issue_type": C("What is the primary type of issue the customer contacted support about?",
                        {"billing": None, "technical": None, "account_access": None, "shipping": None}),
        "customer_tone": C("How would you describe the customer's tone at the start?",
                           {"calm": None, "frustrated": "annoyed but civil", "angry": "hostile or insulting"}),
        "next_step": C("What is the main next step for this case?",
                       {"no_action": "nothing further planned", "refund_processing": "refund or credit being processed",
                        "replacement_shipment": "replacement being sent", "engineering_ticket": "technical investigation pending",
                        "supervisor_callback": "supervisor will call back"}),
        "channel": C("Through which channel did this interaction take place?",
                     {"chat": "live chat", "phone": "phone call", "email": "email"}),
        "priority": C("What follow-up priority should this case get?",
                      {"low": "resolved or calm customer", "medium": None, "high": "escalated or angry customer"}),
        "product_category": C("Which product category is involved?",
                              {"home_networking": None, "software_subscription": None, "consumer_goods": None,
                               "smart_home": None, "consumer_electronics": None}),
    }
    return state, noul, choice
