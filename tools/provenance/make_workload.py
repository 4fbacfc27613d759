#!/usr/bin/env python3
"""Deterministic generator for the benchmark fixture data in this folder.

Writes:
  data/workload_37x21.jsonl   37 decision requests, 21 questions each (15 noul + 6 choice)
  data/bench_single_state.json one request with a ~1,500-token state and 21 noul questions

Standard library only; fixed seed, so re-running reproduces the files byte for byte.
Usage:  python data/make_workload.py
"""
import json
import os
import random

SEED = 37021
HERE = os.path.dirname(os.path.abspath(__file__))

FIRST = ["Maya", "Daniel", "Priya", "Tomasz", "Aisha", "Lucas", "Hannah", "Kenji", "Sofia", "Marcus",
         "Elena", "Omar", "Grace", "Mateo", "Ingrid", "Samuel", "Leila", "Victor", "Chloe", "Ravi",
         "Nadia", "Ethan", "Fatima", "Jonas", "Camila", "Derek", "Yuki", "Olivia", "Andre", "Zara",
         "Patrick", "Mei", "Rafael", "Bianca", "Connor", "Amara", "Felix", "Rosa", "Hugo", "Tanvi"]
LAST = ["Okafor", "Lindqvist", "Ramirez", "Chen", "Novak", "Patel", "Brennan", "Haddad", "Kowalski",
        "Nakamura", "Osei", "Fischer", "Moreau", "Singh", "Alvarez", "O'Connell", "Petrov", "Dubois",
        "Mensah", "Larsen", "Romano", "Khan", "Schultz", "Tanaka", "Abara", "Whitfield", "Costa",
        "Varga", "Ibrahim", "McAllister", "Sato", "Gallagher", "Herrera", "Jovanovic", "Kim"]
CITIES = ["Denver", "Rotterdam", "Austin", "Leeds", "Toronto", "Lyon", "Portland", "Melbourne",
          "Dublin", "Raleigh", "Gothenburg", "Pittsburgh", "Valencia", "Calgary", "Nashville"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]


def person(r):
    return f"{r.choice(FIRST)} {r.choice(LAST)}"


def date(r, year=2024):
    return f"{r.choice(MONTHS)} {r.randint(1, 28)}, {year}"


def money(x):
    return f"${x:,.2f}"


def N(instr, criteria=None):
    d = {"type": "noul", "instructions": instr}
    if criteria:
        d["criteria"] = criteria
    return d


def C(instr, opts):
    return {"type": "choice", "instructions": instr, "criteria": opts}


def fill(r, parts, extras, target):
    """Append shuffled optional sections until the text reaches `target` characters."""
    extras = list(extras)
    r.shuffle(extras)
    text = "\n\n".join(parts)
    while extras and len(text) < target:
        text += "\n\n" + extras.pop()
    return text


def yn(b, yes, no):
    return yes if b else no


# ---------------------------------------------------------------------------
# Domain 1: customer support transcripts
# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Domain 2: incident postmortems
# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Domain 3: insurance claims
# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Domain 4: HR policy cases
# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Domain 5: code review notes
# ---------------------------------------------------------------------------
SNIPPETS = {
    "sql_injection": ('''def find_user(conn, email):
    cur = conn.cursor()
    cur.execute(f"SELECT id, name FROM users WHERE email = '{email}'")
    return cur.fetchone()''', "String formatting into SQL here allows injection; use a parameterised query instead."),
    "retry": ('''def fetch_invoice(client, invoice_id, attempts=5):
    for i in range(attempts):
        try:
            return client.get(f"/invoices/{invoice_id}", timeout=10)
        except TimeoutError:
            time.sleep(2 ** i)
    raise InvoiceUnavailable(invoice_id)''', "Retry with exponential backoff looks fine; consider adding jitter so clients don't retry in lockstep."),
    "cache": ('''_cache = {}

def get_exchange_rate(base, quote):
    key = (base, quote)
    if key not in _cache:
        _cache[key] = rates_api.lookup(base, quote)
    return _cache[key]''', "This cache never expires; exchange rates will be stale after the first lookup for the lifetime of the process."),
    "secrets": ('''STRIPE_KEY = "sk_live_51Hx9...redacted...Qz"

def charge(amount_cents, token):
    return stripe.Charge.create(api_key=STRIPE_KEY, amount=amount_cents,
                                currency="usd", source=token)''', "A live API key is hard-coded in source. It must come from the secrets manager and this key should be rotated."),
    "pagination": ('''async def list_orders(session, customer_id, page_size=100):
    results, cursor = [], None
    while True:
        page = await session.get_orders(customer_id, cursor=cursor, limit=page_size)
        results.extend(page.items)
        if not page.next_cursor:
            return results
        cursor = page.next_cursor''', "Loads every page into memory; for customers with large histories this could be tens of thousands of rows. Consider yielding pages."),
    "dates": ('''def is_expired(subscription):
    return subscription.ends_at < datetime.now()''', "datetime.now() is naive while ends_at is timezone-aware from the ORM; this comparison raises TypeError. Use datetime.now(timezone.utc)."),
}


def code_review(r):
    repo = r.choice(["billing-core", "storefront-web", "data-pipelines", "mobile-bff", "identity-service", "ops-tooling"])
    pr = r.randint(1200, 9800)
    author = person(r)
    reviewers = [person(r) for _ in range(r.randint(1, 3))]
    lang_note = r.choice(["Python 3.11", "Python 3.12"])
    chosen = r.sample(list(SNIPPETS), r.randint(3, 4))
    f = {k: r.random() < 0.5 for k in ["tests_added", "breaking", "migration", "docs", "ci_green", "approved", "flag", "perf",
                                           "deps_added", "coverage_drop", "rebase", "changelog", "owner_review", "followup_ticket", "split_suggested"]}
    security = any(c in ("sql_injection", "secrets") for c in chosen)
    if security:
        f["approved"] = False
    if not f["ci_green"]:
        f["approved"] = False
    status = "approved" if f["approved"] else ("changes_requested" if (security or r.random() < .6) else "pending")
    risk = "high" if (security or f["breaking"] or f["migration"]) else ("medium" if f["deps_added"] or f["perf"] else "low")
    files = r.randint(3, 24)
    adds, dels = r.randint(40, 900), r.randint(5, 400)
    header = (f"Pull request #{pr} in {repo}: \"{r.choice(['Refactor payment retries and add invoice lookup', 'Add currency conversion to order totals', 'Move user lookup into repository layer', 'Subscription expiry checks for renewals', 'Paginate order history endpoint'])}\"\n"
              f"Author: {author}    Reviewers: {', '.join(reviewers)}    Target branch: main    Runtime: {lang_note}\n"
              f"Files changed: {files}    +{adds} / -{dels}")
    desc = ("Description (from author)\n" + r.choice(["This PR pulls several small fixes out of the larger billing refactor so they can ship independently.",
                                                      "Customers reported slow order history pages; this reworks how we fetch and assemble the data.",
                                                      "Part of the Q3 reliability work. Mostly moving code around, with a couple of behaviour changes called out below."])
            + " " + yn(f["breaking"], "Note: this changes the response shape of the public /v1/orders endpoint (field `total` becomes an object with `amount` and `currency`). This is a breaking change for API clients.",
                       "No public API contracts change; all existing endpoints keep their response shape.")
            + " " + yn(f["migration"], f"Includes database migration {r.randint(100, 400):04d}_add_{r.choice(['currency', 'expiry_index', 'email_lower'])} which rewrites a table with about {r.randint(2, 90)} million rows.",
                       "No database migrations are included.")
            + " " + yn(f["flag"], f"New behaviour is behind the feature flag `{r.choice(['orders_v2_totals', 'invoice_retry', 'paged_history'])}`, default off.", "The changes are not behind a feature flag and take effect on deploy."))
    blocks = []
    for i, key in enumerate(chosen):
        code, comment = SNIPPETS[key]
        who = r.choice(reviewers)
        path = r.choice(["src/", "app/", "lib/"]) + r.choice(["billing/", "orders/", "users/", "payments/"]) + r.choice(["service.py", "repository.py", "client.py", "handlers.py"])
        blocks.append(f"Review comment {i + 1} — {who} on {path} line {r.randint(12, 300)}:\n```python\n{code}\n```\n{comment}")
        blocks.append(f"Reply from {author.split()[0]}: " + r.choice(["Good catch, fixing now.", "I'd prefer to handle that in a follow-up, it's out of scope here.",
                                                                    "Agreed, pushed a fix in the latest commit.", "Can you say more? I'm not sure I follow the concern."]))
    checks = ("CI and checks\n" + yn(f["ci_green"], "All CI checks pass (unit tests, lint, type check, container build).",
                                     f"CI is failing: {r.choice(['2 unit tests in test_orders.py fail', 'the type checker reports 3 errors', 'the container build times out'])}.")
              + " " + yn(f["tests_added"], f"The PR adds {r.randint(3, 25)} new tests.", "No new tests were added in this PR.")
              + " " + yn(f["coverage_drop"], f"Line coverage drops from {r.randint(80, 90)}% to {r.randint(70, 79)}%.", "Coverage is unchanged or higher.")
              + " " + yn(f["deps_added"], f"Adds a new third-party dependency: {r.choice(['tenacity', 'cachetools', 'pendulum', 'orjson'])}.", "No new dependencies are added.")
              + " " + yn(f["perf"], f"Benchmark job shows p95 latency for the affected endpoint up by {r.randint(8, 60)}%.", "Benchmarks show no significant performance change."))
    summary = ["Review summary"]
    summary.append(yn(f["docs"], "- Docs: the README and API reference were updated.", "- Docs: not updated; reviewer asked for API docs to be updated before merge."))
    summary.append(yn(f["changelog"], "- CHANGELOG entry added.", "- No CHANGELOG entry."))
    summary.append(yn(f["owner_review"], f"- Code owner for {repo} ({person(r)}) has reviewed.", f"- Code owner review is still required by branch protection."))
    summary.append(yn(f["rebase"], "- Branch is behind main by 14 commits and has merge conflicts; needs a rebase.", "- Branch is up to date with main."))
    summary.append(yn(f["split_suggested"], "- Reviewer suggests splitting this into two PRs: refactor and behaviour change.", "- Size is acceptable as one PR."))
    summary.append(yn(f["followup_ticket"], f"- Follow-up ticket ENG-{r.randint(1000, 9999)} created for deferred comments.", "- No follow-up tickets created."))
    summary.append(f"- Current status: {status.replace('_', ' ')}.")
    flist = ["Files changed (top by size)"]
    for _ in range(min(files, r.randint(5, 8))):
        flist.append(f"  {r.choice(['src', 'app', 'lib', 'tests'])}/{r.choice(['billing', 'orders', 'users', 'payments', 'common'])}/"
                     f"{r.choice(['service', 'repository', 'client', 'handlers', 'models', 'schemas', 'utils', 'test_api'])}.py  +{r.randint(2, 180)} -{r.randint(0, 90)}")
    test_block = yn(f["tests_added"], "Example of a new test:\n```python\ndef test_fetch_invoice_retries_then_succeeds(fake_client):\n"
                    "    fake_client.fail_times(2, TimeoutError)\n    inv = fetch_invoice(fake_client, \"inv_123\")\n"
                    "    assert inv.status_code == 200\n    assert fake_client.calls == 3\n```", "")
    parts = [header, desc, "\n".join(flist)] + blocks + ([test_block] if test_block else []) + [checks, "\n".join(summary)]
    extras = [
        "Team review guidelines: approve only when CI is green; any finding that exposes credentials or allows injection blocks the merge regardless of other approvals; "
        "breaking API changes need a deprecation notice to clients at least 30 days before release.",
        f"Discussion thread (general): {r.choice(reviewers)} asked whether the change was tested against the staging dataset. "
        f"{author.split()[0]} replied that it was run against a snapshot from last week and that the numbers matched production to within rounding.",
        f"Deployment notes: after merge the change goes out with the next release train on {r.choice(WEEKDAYS[:5])}. Rollback is by redeploying the previous image; "
        "if a migration is involved the rollback plan must be written in the PR before merge.",
        "Style nits (non-blocking): a couple of functions exceed the 50-line guideline, one variable is named `data2`, and there is an unused import in the test module. "
        "None of these need to block the PR.",
        "Security checklist (from the PR template): [x] no secrets in code or config, [x] inputs validated at the boundary, [ ] threat model updated, "
        "[x] logging does not include personal data. Reviewers noted the checklist is self-reported by the author and was not independently verified.",
        f"Observability: the author added {r.randint(0, 4)} new metrics and a structured log line on the error path. {r.choice(reviewers).split()[0]} asked for the log line to include "
        "the request ID so it can be correlated with traces.",
        f"Earlier review round: the first version of this PR was opened {r.randint(2, 15)} days ago and received {r.randint(4, 20)} comments, most of which were resolved. "
        "This summary covers the second round only.",
        f"Commit history: {r.randint(3, 18)} commits, including '{r.choice(['wip', 'fix tests', 'address review'])}' and 'squash me'. The repository uses squash merges so this does not matter for main.",
    ]
    state = fill(r, parts, extras, r.randint(4800, 5800))
    noul = {
        "tests_added": N("Does the PR add new tests?"),
        "breaking_change": N("Does the PR introduce a breaking change to a public API?"),
        "has_migration": N("Does the PR include a database migration?"),
        "docs_updated": N("Were documentation files updated in this PR?"),
        "ci_passing": N("Are all CI checks currently passing?"),
        "approved": N("Has the PR been approved for merge?"),
        "feature_flagged": N("Is the new behaviour behind a feature flag?"),
        "perf_regression": N("Do benchmarks show a performance regression?"),
        "new_dependency": N("Does the PR add a new third-party dependency?"),
        "coverage_dropped": N("Did test coverage decrease?"),
        "needs_rebase": N("Does the branch need a rebase because of conflicts?"),
        "changelog": N("Was a CHANGELOG entry added?"),
        "owner_reviewed": N("Has the code owner already reviewed the PR?"),
        "security_issue": N("Did a reviewer flag a security problem such as injection or leaked credentials?"),
        "split_suggested": N("Did a reviewer suggest splitting the PR?"),
        "followup_ticket": N("Was a follow-up ticket created for deferred comments?"),
        "hardcoded_secret": N("Does any quoted code contain a hard-coded secret key?"),
        "timezone_bug": N("Was a timezone or naive datetime bug pointed out?"),
    }
    choice = {
        "status": C("What is the current review status of the PR?", {"approved": None, "changes_requested": None, "pending": "awaiting decision"}),
        "risk": C("How risky is merging this PR?", {"low": None, "medium": "perf or dependency concerns", "high": "security, breaking or migration"}),
        "size": C("How large is the change by lines added?", {"small": "under 200", "medium": "200 to 500", "large": "over 500"}),
        "repo_area": C("Which repository is the PR in?", {"billing_core": None, "storefront_web": None, "data_pipelines": None, "mobile_bff": None, "identity_service": None, "ops_tooling": None}),
        "merge_blocker": C("What is the main blocker to merging?",
                           {"none": None, "failing_ci": None, "security_finding": None, "missing_review": "code owner or approvals missing"}),
        "reviewer_count": C("How many reviewers are listed?", {"one": None, "two": None, "three": None}),
    }
    return state, noul, choice


# ---------------------------------------------------------------------------
# Domain 6: contract clauses
# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Domain 7: medical-admin triage notes (administrative, non-diagnostic)
# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Domain 8: procurement requests
# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Domain 9: security alert logs
# ---------------------------------------------------------------------------
def security_alert(r):
    kind = r.choice(["brute_force", "malware", "exfiltration", "phishing", "impossible_travel"])
    user = f"{r.choice(FIRST).lower()}.{r.choice(LAST).lower().replace(chr(39), '')}"
    host = f"{r.choice(['WS', 'LT', 'SRV'])}-{r.choice(['FIN', 'ENG', 'HR', 'OPS', 'SALES'])}-{r.randint(100, 999)}"
    analyst = person(r)
    src_ip = f"{r.choice([45, 91, 103, 185, 193])}.{r.randint(1, 254)}.{r.randint(1, 254)}.{r.randint(1, 254)}"
    f = {k: r.random() < 0.5 for k in ["mfa", "blocked", "lateral", "admin", "isolated", "pw_reset", "false_positive", "ioc_match", "edr_alert",
                                           "data_sensitive", "after_hours", "vpn", "ticket", "legal_notify", "user_contacted"]}
    if f["false_positive"]:
        f["lateral"] = f["legal_notify"] = f["ioc_match"] = f["edr_alert"] = False
    sev = "low" if f["false_positive"] else ("critical" if (f["lateral"] or f["data_sensitive"] and kind == "exfiltration") else r.choice(["medium", "high"]))
    hh = r.choice([r.randint(0, 5), r.randint(9, 16), r.randint(20, 22)])
    first_min = r.randint(0, 59)
    f["after_hours"] = hh < 7 or hh >= 19
    dept_code = host.split("-")[1]
    dept = dict(FIN="Finance", ENG="Engineering", HR="HR", OPS="Operations", SALES="Sales")[dept_code]
    header = (f"SOC ALERT TRIAGE — ticket SEC-{r.randint(30000, 39999)}\nRule: {dict(brute_force='AUTH-017 Excessive failed logins', malware='EDR-204 Suspicious process tree', exfiltration='DLP-311 Large outbound transfer', phishing='MAIL-088 Credential phishing link clicked', impossible_travel='IDP-042 Impossible travel')[kind]}\n"
              f"Affected user: {user}    Host: {host}    Analyst on shift: {analyst}\nFirst alert-relevant event: {date(r)} @@FIRST@@ UTC")
    logs = []
    t = hh * 3600 + first_min * 60 - 1800
    bg = [f"idp auth_success user={user} src=10.{r.randint(0, 40)}.{r.randint(0, 255)}.{r.randint(2, 250)} geo=office client=SSO-web",
          f"proxy GET user={user} url=https://{r.choice(['intranet.corp.example', 'jira.corp.example', 'mail.corp.example'])}/ categ=business",
          f"edr heartbeat host={host} status=healthy",
          "proxy GET user={} url=https://{}/ categ={}".format(user, *r.choice([('news.bbc.co.uk', 'news'), ('weather.com', 'reference'), ('github.com', 'development')])),
          f"dns query host={host} name={r.choice(['update.microsoft.com', 'slack.com', 'zoom.us'])} result=NOERROR"]
    for b in r.sample(bg, r.randint(3, 5)):
        t += r.randint(30, 300)
        logs.append(f"{(t // 3600) % 24:02d}:{(t // 60) % 60:02d}:{t % 60:02d} {b}")
    t = hh * 3600 + first_min * 60 - 1
    n_bg = len(logs)

    def L(msg):
        nonlocal t
        t += r.randint(1, 240)
        logs.append(f"{(t // 3600) % 24:02d}:{(t // 60) % 60:02d}:{t % 60:02d} {msg}")

    if kind == "brute_force":
        for _ in range(r.randint(6, 9)):
            L(f"idp auth_failure user={user} src={src_ip} reason=bad_password client={r.choice(['OWA', 'IMAP', 'SSO-web'])}")
        L(yn(f["blocked"], f"idp account_lockout user={user} after=10 failures", f"idp auth_success user={user} src={src_ip} client=IMAP"))
    elif kind == "malware":
        L(f"edr process_start host={host} parent=WINWORD.EXE child=powershell.exe args='-enc JABzAD0ATgBlAHcA...'")
        L(f"edr network_conn host={host} proc=powershell.exe dst={src_ip}:443")
        L(f"edr file_write host={host} path=C:\\Users\\{user}\\AppData\\Roaming\\upd{r.randint(10, 99)}.dll")
        L(yn(f["blocked"], f"edr action=quarantine host={host} file=upd.dll result=success", f"edr action=detect_only host={host} policy=audit_mode"))
    elif kind == "exfiltration":
        for _ in range(r.randint(4, 6)):
            L(f"proxy upload user={user} host={host} dst={r.choice(['mega.nz', 'transfer.sh', 'drive.personal-cloud.io'])} bytes={r.randint(200, 900) * 1048576}")
        L(yn(f["blocked"], "dlp policy=block_uploads action=blocked category=personal_cloud", "dlp policy=monitor action=allowed category=personal_cloud"))
    elif kind == "phishing":
        L(f"mail delivered to={user}@corp.example subject='Action required: payroll update' sender=hr-notice@{r.choice(['corp-examp1e.com', 'payroll-portal.net'])}")
        L(f"proxy GET user={user} url=https://{r.choice(['login-m365-verify.com', 'sso-corp-auth.net'])}/ categ=newly_registered")
        L(f"proxy POST user={user} url=https://login-m365-verify.com/submit bytes=412")
        L(yn(f["blocked"], "mail zap action=removed_from_inboxes count=37", "mail zap action=none reason=no_verdict"))
    else:
        L(f"idp auth_success user={user} src=82.{r.randint(1, 254)}.{r.randint(1, 254)}.{r.randint(1, 254)} geo=GB-London")
        L(f"idp auth_success user={user} src={src_ip} geo={r.choice(['SG-Singapore', 'BR-Sao Paulo', 'US-Dallas'])} (travel speed 9,400 km/h)")
        L(yn(f["blocked"], "idp conditional_access action=block_session", "idp conditional_access action=allow reason=trusted_device"))
    L("idp mfa " + yn(f["mfa"], "challenge=push result=approved" if not f["false_positive"] else "challenge=push result=approved_by_owner", "not_enrolled user=" + user))
    if f["lateral"]:
        L(f"edr smb_session host={host} dst=SRV-FILE-0{r.randint(1, 4)} user={user} share=ADMIN$")
        L(f"edr remote_exec host=SRV-FILE-0{r.randint(1, 4)} tool=psexec user={user}")
    if f["edr_alert"]:
        L(f"edr alert host={host} name='Credential dumping attempt' severity=high")
    ctx_lines = ["Context gathered"]
    ctx_lines.append(yn(f["admin"], f"- {user} holds privileged access (member of Domain Admins / cloud global admin).", f"- {user} is a standard user with no admin rights."))
    ctx_lines.append(yn(f["mfa"], "- The account is enrolled in MFA.", "- The account is not enrolled in MFA (exception granted last year, never revoked)."))
    ctx_lines.append(yn(f["vpn"], "- The activity came through the corporate VPN.", "- The activity did not come through the corporate VPN."))
    ctx_lines.append(yn(f["ioc_match"], f"- Source {src_ip} matches a threat-intel indicator ({r.choice(['known botnet C2', 'credential-stuffing infrastructure', 'bulletproof hosting'])}).", f"- Source {src_ip} has no matches in threat-intel feeds."))
    ctx_lines.append(yn(f["data_sensitive"], f"- The user has access to sensitive data ({r.choice(['customer PII', 'payroll records', 'source code for the payments platform'])}).", "- The user's access is limited to non-sensitive internal data."))
    ctx_lines.append(yn(f["lateral"], "- Evidence of lateral movement to file servers was found.", "- No lateral movement was observed in EDR or network logs."))
    actions = ["Response actions"]
    actions.append(yn(f["isolated"], f"- {host} isolated from the network via EDR at {(t // 3600 + 1) % 24:02d}:{r.randint(0, 59):02d}.", f"- {host} was not isolated."))
    actions.append(yn(f["pw_reset"], "- Password reset forced and all sessions revoked.", "- No password reset has been performed yet."))
    actions.append(yn(f["user_contacted"], f"- User contacted by phone; {user.split('.')[0].title()} " + yn(f["false_positive"], "confirmed the activity was expected and their own (new device / authorised testing).", "did not recognise the activity."),
                      "- User has not been contacted yet."))
    actions.append(yn(f["legal_notify"], "- Privacy and legal teams notified because personal data may be involved.", "- Legal and privacy teams have not been notified."))
    actions.append(yn(f["false_positive"], "- Analyst conclusion: benign / false positive; tuning request raised for the rule.", "- Analyst conclusion: true positive; incident response continues."))
    actions.append(yn(f["ticket"], f"- Escalated to the incident response on-call ({person(r)}) as INC-{r.randint(5000, 9999)}.", "- Not escalated beyond tier 1."))
    header = header.replace("@@FIRST@@", logs[n_bg].split()[0])
    enrich = (f"Enrichment for {src_ip}\nASN: AS{r.randint(10000, 65000)} ({r.choice(['M247 Ltd', 'DigitalOcean', 'OVH SAS', 'Choopa LLC', 'China Unicom'])}). "
              f"Geo: {r.choice(['NL', 'SG', 'US', 'RU', 'BR', 'DE'])}. First seen in our logs: {r.choice(['today', str(r.randint(2, 90)) + ' days ago'])}. "
              f"Reverse DNS: {r.choice(['none', 'static.' + src_ip.replace('.', '-') + '.hosting.example', 'vps' + str(r.randint(100, 999)) + '.cloud.example'])}. "
              f"Passive DNS shows {r.randint(0, 40)} domains resolving to this address in the last 30 days.")
    at = ["Analyst activity"]
    for i, a in enumerate(r.sample(["Acknowledged alert and assigned to self.", "Pulled 24h of identity-provider logs for the user.",
                                    "Checked EDR process tree and network connections for the host.", "Queried threat-intel platform for the source address.",
                                    "Reviewed mailbox rules and OAuth app grants; nothing unusual found.", "Checked whether other users received similar activity.",
                                    "Added notes and evidence screenshots to the ticket."], r.randint(4, 6))):
        at.append(f"+{(i + 1) * r.randint(3, 9)} min  {a}")
    parts = [header, "Raw events\n" + "\n".join(logs), enrich, "\n".join(ctx_lines), "\n".join(at), "\n".join(actions)]
    extras = [
        "Playbook reference: for credential-based alerts, confirm with the user through a known-good channel, revoke sessions, reset credentials, review mailbox rules and OAuth grants, "
        "and check for new MFA devices registered in the last 7 days.",
        f"Asset details: {host} runs {r.choice(['Windows 11 23H2', 'macOS 14.5', 'Ubuntu 22.04 LTS', 'Windows Server 2019'])}; last patched {r.randint(2, 60)} days ago; EDR agent version {r.randint(7, 8)}.{r.randint(0, 20)}; "
        f"owner department {dept}.",
        f"User risk profile: {r.randint(0, 4)} prior security alerts in 12 months; phishing simulation click rate {r.randint(0, 40)}%; security awareness training {r.choice(['completed', 'overdue by 3 months'])}.",
        "Analyst notes: the alert correlated with two lower-severity events in the previous 24 hours that were auto-closed by the SOAR playbook. "
        "Those auto-closure rules will be reviewed as part of the monthly tuning session.",
        "Severity matrix: critical = confirmed compromise with lateral movement or sensitive data exposure; high = likely compromise of a single account or host; "
        "medium = suspicious activity contained by controls; low = benign or false positive.",
        f"Shift handover: {analyst.split()[0]} hands over at {r.choice(['07:00', '15:00', '23:00'])} UTC. Outstanding tasks are tracked in the ticket; the next analyst should confirm containment and update the timeline.",
        f"Related alerts in the last hour: {r.randint(0, 6)} alerts on other users from the same rule, none from the same source address. SIEM query used: "
        f"index=auth user={user} earliest=-24h | stats count by src, result.",
        "Detection engineering comment: the rule threshold was lowered last month after a missed incident, which has increased volume. "
        "False-positive rate for this rule is currently estimated at around 30%.",
    ]
    state = fill(r, parts, extras, r.randint(4600, 5600))
    noul = {
        "mfa_enrolled": N("Is the affected account enrolled in MFA?"),
        "activity_blocked": N("Did a security control block the activity shown in the logs?"),
        "lateral_movement": N("Was lateral movement to other systems observed?"),
        "privileged_user": N("Does the affected user hold admin or privileged access?"),
        "host_isolated": N("Was the affected host isolated from the network?"),
        "password_reset": N("Has a forced password reset been performed?"),
        "false_positive": N("Did the analyst conclude the alert was a false positive?"),
        "threat_intel_match": N("Does the source IP match a threat-intelligence indicator?"),
        "cred_dumping": N("Did EDR report a credential dumping attempt?"),
        "sensitive_access": N("Does the user have access to sensitive data?"),
        "after_hours": N("Did the first event occur outside 07:00-19:00 UTC?"),
        "via_vpn": N("Did the activity come through the corporate VPN?"),
        "escalated_ir": N("Was the alert escalated to incident response?"),
        "legal_notified": N("Were the legal and privacy teams notified?"),
        "user_contacted": N("Has the affected user been contacted?"),
        "user_recognised": N("Did the user confirm the activity was their own?"),
    }
    choice = {
        "alert_type": C("What type of alert is this?", {"brute_force": None, "malware": None, "exfiltration": "data leaving the network", "phishing": None, "impossible_travel": None}),
        "severity": C("What severity should this alert have per the severity matrix?", {"low": None, "medium": None, "high": None, "critical": None}),
        "host_type": C("What kind of host is involved?", {"workstation": "WS prefix", "laptop": "LT prefix", "server": "SRV prefix"}),
        "next_action": C("What is the most important next action?",
                         {"close_alert": "benign, tune rule", "isolate_host": None, "reset_credentials": None, "escalate_ir": None, "contact_user": None}),
        "attack_stage": C("Which attack stage best fits the evidence?", {"none": "benign", "initial_access": None, "execution": None, "lateral_movement": None, "exfiltration": None}),
        "department": C("Which department does the host belong to?", {"finance": None, "engineering": None, "hr": None, "operations": None, "sales": None}),
    }
    return state, noul, choice


# ---------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------
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
