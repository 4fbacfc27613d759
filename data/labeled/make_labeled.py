#!/usr/bin/env python3
"""Deterministic generator for the hand-labeled evaluation sets in this folder.

All items are hand-written below as plain data. Running this script rewrites
the ``*.jsonl`` files next to it, validates them and prints per-file counts and
label distributions:

    python data/labeled/make_labeled.py            # write + validate
    python data/labeled/make_labeled.py --check    # validate existing files only

Stdlib only. Output is byte-for-byte reproducible.

Line format (one decision request per line)::

    {"id": str, "group_id": str, "task": str,
     "state": str | object,
     "questions": {QID: QUESTION, ...},
     "labels": {QID: expected, ...}}

Label conventions: choice -> option name (str); noul -> JSON boolean;
score -> integer level index (0 = lowest criterion).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------------------
# 1. routing.jsonl - support-queue routing (choice)
# ---------------------------------------------------------------------------

ROUTING_INSTRUCTIONS = "Which support queue should this customer ticket be routed to?"

ROUTING_OPTIONS = {
    "billing": "Charges, invoices, refunds of charges, payment methods, plan pricing and proration.",
    "technical": "Bugs, errors, crashes, performance problems, integrations and API issues.",
    "account_access": "Login problems, password resets, two-factor authentication, locked or compromised accounts, sign-in email changes, admin rights.",
    "shipping": "Delivery status, tracking, lost or damaged parcels, delivery addresses and shipping options.",
    "cancellation": "Cancelling subscriptions, orders, trials, renewals or closing the account.",
    "other": "Anything else: feedback, feature requests, partnerships, press, jobs, general company questions.",
}

# (label, ticket text)
ROUTING_ITEMS = [
    # billing
    ("billing", "Hi, I was charged twice for my March subscription - two charges of $29.99 on the 3rd. Can you refund the duplicate one?"),
    ("billing", "My invoice still shows the Pro plan price, but I downgraded to Basic last month. Why am I being billed the higher amount?"),
    ("billing", "Could I get an invoice with our company name and VAT number on it? The one in the portal only shows my personal name, and our accounts team won't accept it."),
    ("billing", "The promo code SPRING20 didn't apply at checkout and I ended up paying full price. Could you credit me the difference?"),
    ("billing", "My card expired and I've added a new one, but this month's payment still shows as failed. How do I retry the charge so my plan doesn't lapse?"),
    ("billing", "There's a charge of $112.40 from your company on my credit card statement that I don't recognize. What is it for?"),
    ("billing", "We'd like to switch our team of 12 from monthly to annual billing. Will the unused part of this month be prorated on the first annual invoice?"),
    # technical
    ("technical", "The app crashes every time I try to upload a photo larger than about 10 MB. I'm on Android 14 with app version 5.2.1."),
    ("technical", "Since yesterday's update the dashboard only shows a spinning wheel and never loads. I've cleared my cache and tried both Chrome and Firefox."),
    ("technical", "Your API has been returning 502 errors on roughly a third of our requests to /v2/orders since 14:00 UTC. Our integration code hasn't changed."),
    ("technical", "Sync between the desktop app and my phone has stopped working. Notes I create on my laptop never show up on the phone, even after restarting both."),
    ("technical", "The CSV export has every date shifted by one day. An order placed on 5 May appears as 4 May in the exported file."),
    ("technical", "Push notifications stopped arriving on my iPhone, even though they're enabled both in the app and in iOS settings."),
    ("technical", "The webhook we configured doesn't fire when an invoice is marked paid. The endpoint responds fine when we test it with curl, and nothing shows in the delivery log."),
    # account_access
    ("account_access", "I can't log in - it says my password is wrong, and the reset email never arrives. I've checked spam and tried three times."),
    ("account_access", "I got a new phone and lost my authenticator app, so I can't get past two-factor authentication anymore. How do I get back into my account?"),
    ("account_access", "My account was locked after too many login attempts. It's been over an hour and it still says it's locked."),
    ("account_access", "I think someone else got into my account. There's a login from a country I've never been to, and the email address on the account was changed without me doing it."),
    ("account_access", "I need to change the email address I sign in with, because I no longer have access to my old work email and can't receive the verification code."),
    ("account_access", "Our only workspace admin left the company and nobody else has admin rights. How can admin access be transferred to me so we can manage users again?"),
    ("account_access", "I forgot both my username and the email I registered with. My name is Dana Whitfield and my phone number ends in 4471 - can you help me recover the account?"),
    # shipping
    ("shipping", "My order #48213 was supposed to arrive last Tuesday and the tracking hasn't updated in six days."),
    ("shipping", "The tracking page says my package was delivered yesterday, but it isn't at my door and none of my neighbors have it."),
    ("shipping", "Can I change the delivery address on an order I placed an hour ago? I'm moving this weekend."),
    ("shipping", "Do you ship to Norway, and how long does delivery there usually take?"),
    ("shipping", "Two of the three items in my order arrived, but the box with the lamp is missing. Was it sent in a separate parcel?"),
    ("shipping", "The box arrived completely crushed and the ceramic mug inside was broken. The courier clearly dropped it."),
    ("shipping", "Is there an express shipping option? I need the order to arrive by Friday for a birthday."),
    # cancellation
    ("cancellation", "Please cancel my subscription effective at the end of the current billing period. I won't be renewing."),
    ("cancellation", "I'd like to close my account entirely and have all my data deleted."),
    ("cancellation", "I placed an order by mistake ten minutes ago (#55102). Can you cancel it before it ships?"),
    ("cancellation", "How do I turn off auto-renewal? I don't want my yearly plan to renew next month."),
    ("cancellation", "We're moving to a different vendor. Please cancel our team plan and all 8 seats as of June 30."),
    ("cancellation", "I signed up for the free trial and want to cancel it before it converts into a paid plan."),
    ("cancellation", "I want to end my membership. There's no cancel button anywhere in the settings, so please just do it for me."),
    # other
    ("other", "Do you have any openings for summer internships on your design team?"),
    ("other", "I love the new dark mode - just wanted to say thanks to whoever built it!"),
    ("other", "Are you planning to add a Dutch language option to the app? A lot of people in our club would use it."),
    ("other", "I'm a journalist writing a piece about subscription apps. Who could I talk to for a comment?"),
    ("other", "Where is your company's head office located? I'd like to send a letter by post."),
    ("other", "Would you be interested in a partnership? We run a newsletter with 40k subscribers in your niche."),
    ("other", "What are your customer support hours on weekends?"),
]


def build_routing():
    rows = []
    for i, (label, text) in enumerate(ROUTING_ITEMS, 1):
        rid = f"routing-{i:03d}"
        rows.append({
            "id": rid,
            "group_id": rid,
            "task": "routing",
            "state": text,
            "questions": {
                "queue": {
                    "type": "choice",
                    "instructions": ROUTING_INSTRUCTIONS,
                    "criteria": dict(ROUTING_OPTIONS),
                }
            },
            "labels": {"queue": label},
        })
    return rows


# ---------------------------------------------------------------------------
# 2. tools.jsonl - agent tool selection (choice)
# ---------------------------------------------------------------------------

TOOLS_INSTRUCTIONS = (
    "An assistant received the user request in the state. Which single tool should it "
    "call first to fulfil the request? Choose 'none' if it can answer directly without any tool."
)

TOOL_OPTIONS = {
    "search_web": "Search the public web for current information, news, prices or facts.",
    "get_weather": "Get the current weather or the forecast for a location and date.",
    "send_email": "Send an email on the user's behalf to one or more recipients.",
    "create_calendar_event": "Create an event or appointment on the user's calendar.",
    "run_sql": "Run a read-only SQL query on the company analytics database (tables: orders, customers, products, refunds).",
    "calculator": "Evaluate an arithmetic or numeric expression exactly.",
    "none": "No tool is needed; the assistant answers directly from its own knowledge or the conversation.",
}

TOOLS_ITEMS = [
    # search_web
    ("search_web", "What are the latest reviews saying about the new Pixel phone that came out this week?"),
    ("search_web", "Find the opening hours of the Louvre museum for this month, including any special closures."),
    ("search_web", "What's today's exchange rate between the euro and the Japanese yen?"),
    ("search_web", "Find recent news articles about the dock workers' strike at the port of Rotterdam."),
    ("search_web", "Look up the ticket prices for the Coldplay concert in Lisbon next summer."),
    # get_weather
    ("get_weather", "Will it rain in Seattle tomorrow afternoon?"),
    ("get_weather", "What's the temperature in Madrid right now?"),
    ("get_weather", "Should I pack a warm jacket for Edinburgh this weekend? What does the forecast look like?"),
    ("get_weather", "Is it going to snow in Denver on Thursday?"),
    ("get_weather", "How windy will it be in Chicago tonight?"),
    # send_email
    ("send_email", "Email Priya that the design review moved to 3pm and ask her to bring the mockups."),
    ("send_email", "Send a thank-you note to jorge@acme.io for hosting our team yesterday."),
    ("send_email", "Let the whole team at team@ourco.com know by email that the office is closed on Monday. Send it now."),
    ("send_email", "Reply to Mark's email saying I approve the Q3 budget as proposed."),
    ("send_email", "Send the client an email confirming we received their signed contract; their address is legal@brightway.com."),
    # create_calendar_event
    ("create_calendar_event", "Put a dentist appointment on my calendar for next Tuesday at 9:30."),
    ("create_calendar_event", "Block out 2 to 4pm on Friday in my calendar for focused work."),
    ("create_calendar_event", "Set up a recurring 30-minute one-on-one with Lena every Monday at 10am on my calendar."),
    ("create_calendar_event", "Add my mom's birthday dinner on March 14 at 7pm to my calendar."),
    ("create_calendar_event", "Schedule the quarterly planning session on April 2 from 1 to 3pm in room B."),
    # run_sql
    ("run_sql", "How many orders did we get from customers in Germany last month?"),
    ("run_sql", "List our top 10 products by revenue this quarter."),
    ("run_sql", "What's the average order value for new versus returning customers in 2024?"),
    ("run_sql", "Which customers haven't placed an order in the last 90 days?"),
    ("run_sql", "Pull the number of refunds we processed per week since January."),
    # calculator
    ("calculator", "What's 17.5% of 2,340?"),
    ("calculator", "If I invest $5,000 at 4% interest compounded annually, how much will I have after 7 years?"),
    ("calculator", "What is 4,812 divided by 37, rounded to two decimal places?"),
    ("calculator", "Split a $186.40 dinner bill between 6 people after adding a 20% tip - how much does each person pay?"),
    ("calculator", "What's the square root of 7,921 multiplied by 3.2?"),
    # none
    ("none", "Thanks, that's all I needed!"),
    ("none", "Can you rewrite this to sound more formal: 'hey, we can't make it thursday, sorry'?"),
    ("none", "What's the difference between a list and a tuple in Python?"),
    ("none", "How do you say 'good morning' in Spanish?"),
    ("none", "Give me three name ideas for a grey kitten."),
]


def build_tools():
    rows = []
    for i, (label, text) in enumerate(TOOLS_ITEMS, 1):
        rid = f"tools-{i:03d}"
        rows.append({
            "id": rid,
            "group_id": rid,
            "task": "tools",
            "state": text,
            "questions": {
                "tool": {
                    "type": "choice",
                    "instructions": TOOLS_INSTRUCTIONS,
                    "criteria": dict(TOOL_OPTIONS),
                }
            },
            "labels": {"tool": label},
        })
    return rows


# ---------------------------------------------------------------------------
# 3. policy.jsonl - yes/no policy criteria over shared longer cases (noul)
# ---------------------------------------------------------------------------

NOUL_CRITERIA = {
    "true": "The case text clearly supports answering yes.",
    "false": "The case text supports answering no.",
}

# Each case: (case_id, kind, state_text, [(qid, question, label), ...])
POLICY_CASES = [
    (
        "expense-travel-denver",
        "expense_claim",
        """POLICY (Travel & Expense, section 4):
- Meals are reimbursed up to $75 per day for domestic travel. Alcohol is never reimbursable.
- An itemized receipt is required for any single expense of $25 or more.
- Claims must be submitted within 30 days of the last expense date.
- Economy class is required for flights shorter than 6 hours.
- Hotels are reimbursed up to $220 per night unless a higher rate was pre-approved in writing by the employee's manager.

CLAIM:
Employee: Jordan Lee (Sales). Trip: customer visits in Denver, March 4-6. Claim submitted: March 28.
1. Round-trip flight Chicago-Denver, economy, 2h 40m each way: $412.00 (receipt attached).
2. Hotel, 2 nights at $245.00/night: $490.00 (receipt attached). Attached email from manager Rita Gomez dated Feb 20: "Approved - the conference hotel rate is $245, book it."
3. Meals March 4: $38.00 (receipts attached).
4. Meals March 5: $92.00 - dinner with a prospective customer; the itemized receipt shows $62.00 of food and a $30.00 bottle of wine.
5. Meals March 6: airport breakfast, $22.00 (no receipt).
6. Taxi from airport to hotel: $48.00 (receipt attached).
Jordan's note: "Wine was ordered for the client dinner; please reimburse the full receipt." """,
        [
            ("submitted_on_time", "Was the claim submitted within the 30-day deadline?", True),
            ("hotel_compliant", "Is the hotel rate allowed under the policy, taking any written pre-approval into account?", True),
            ("has_nonreimbursable", "Does the claim include an item that the policy says is never reimbursable?", True),
            ("march5_over_limit", "After removing any non-reimbursable items, do the March 5 meals exceed the $75 daily meal limit?", False),
            ("missing_required_receipt", "Is any expense missing a receipt that the policy requires?", False),
            ("flight_class_violation", "Was the flight booked in a higher class than the policy allows?", False),
        ],
    ),
    (
        "refund-headphones",
        "refund_request",
        """RETURNS POLICY:
- Unused items in original packaging may be returned within 30 days of delivery for a full refund.
- Opened electronics may be returned within 15 days of delivery; a 15% restocking fee is deducted.
- Items that arrive damaged or defective must be reported within 7 days of delivery with photos; these receive a full refund with no restocking fee.
- Items marked "Clearance - final sale" cannot be returned or refunded.
- Refunds are always issued to the original payment method.

CUSTOMER MESSAGE (received June 12):
"Hi, I ordered the Aurora wireless headphones ($180) and a phone case from your clearance section ($12, listed as 'Clearance - final sale'). Both were delivered on June 2 and I paid with my Visa card. I opened the headphones and used them for a couple of days, but they just don't fit my ears comfortably - they work fine, there's nothing wrong with them, they're simply not for me. The phone case turned out to be a slightly different shade of blue than in the photos. I'd like to return both and get the full $192 back, ideally as store credit on a gift card because my Visa card was replaced last week. I still have the original box for the headphones."

ORDER RECORD: Order #88310, delivered June 2, payment Visa ending 0921, no previous returns on this account.""",
        [
            ("within_opened_window", "Was the headphones return requested within the window the policy allows for opened electronics?", True),
            ("headphones_full_refund", "Is the customer entitled to a full refund of the headphones with no restocking fee?", False),
            ("case_refundable", "Is the phone case eligible for a refund?", False),
            ("giftcard_allowed", "Does the policy allow issuing this refund as a gift card, as the customer asked?", False),
            ("restocking_fee_applies", "Does a 15% restocking fee apply to the headphones refund?", True),
            ("within_30_days", "Was the request made within 30 days of delivery?", True),
        ],
    ),
    (
        "access-orders-db-contractor",
        "access_request",
        """ACCESS POLICY (Production Data):
- Every request for access to a production database needs (a) a ticket approved by the requester's manager, (b) approval from the database's data owner, and (c) security awareness training completed within the last 12 months.
- Write access is limited to members of the SRE team. Everyone else may receive read-only access.
- Access to any table containing personal data (PII) additionally requires approval from the Privacy team.
- Temporary access may be granted for at most 14 days; for contractors the maximum is 7 days.

REQUEST TICKET ACC-4471 (opened May 3):
Requester: Sam Ortiz, data analyst (contractor via Northbeam Consulting), Analytics team.
Resource: orders_db (production), tables `orders`, `order_items` and `customers`.
Access level: read-only.
Duration: 10 days (May 6 - May 15).
Justification: "Build the Q2 churn dashboard for the growth team; I need order history joined with customer sign-up dates."
Notes from the data catalog: `customers` contains name, email, phone and shipping address.
Approvals on the ticket: Elena Petrova (Analytics manager, Sam's manager) - approved May 3. Victor Huang (orders_db data owner) - approved May 4. Privacy team - not yet requested.
Training record: security awareness training completed September 14 of last year (about 8 months ago).""",
        [
            ("manager_approved", "Has the requester's manager approved the ticket?", True),
            ("training_current", "Is the requester's security training current under the policy?", True),
            ("duration_ok", "Is the requested duration within the maximum allowed for this requester?", False),
            ("involves_pii", "Does the request include a table containing personal data (PII)?", True),
            ("all_approvals", "Have all approvals required for this request been obtained?", False),
            ("write_access", "Is the requester asking for write access?", False),
        ],
    ),
    (
        "moderation-forum-patch-post",
        "content_moderation",
        """COMMUNITY GUIDELINES (Ironvale game forum):
1. No personal attacks, insults or slurs directed at other members.
2. Do not share anyone's private information (real names, addresses, phone numbers).
3. Selling, trading or advertising is allowed only in the #marketplace subforum.
4. Links to external sites are fine when they are relevant to the discussion.
5. Strong language is allowed as long as it is not aimed at a person.
6. Story spoilers for the latest expansion must be wrapped in [spoiler] tags.

POST (subforum: #general, author: frostbyte_22):
"Okay, this damn patch completely wrecked the ranged classes. Rangers lost 20% damage and nobody at the studio even mentioned it in the announcement - it's buried in the full patch notes here: https://ironvale-game.com/patch-notes/3-4. And @kev_88, you're an idiot who has clearly never played ranked if you think this is 'balanced'. Seriously, uninstall.
Also, for anyone still doing the new expansion campaign: the reason the last boss fight feels so pointless is that Mira turns out to be the traitor who opened the gates, so the whole final act makes no sense.
Btw, I'm selling my spare beta keys for $5 each, DM me if you want one."

CONTEXT: No spoiler tags appear anywhere in the post. The linked page is the official patch notes page. The post contains no names, addresses or phone numbers.""",
        [
            ("personal_attack", "Does the post contain a personal attack on another member?", True),
            ("private_info", "Does the post share someone's private information?", False),
            ("ad_outside_marketplace", "Does the post advertise something for sale outside the subforum where that is allowed?", True),
            ("link_violation", "Does the external link in the post break the guidelines?", False),
            ("language_violation", "Is the phrase 'this damn patch', on its own, a violation of the strong-language rule?", False),
            ("untagged_spoiler", "Does the post contain an untagged story spoiler for the latest expansion?", True),
        ],
    ),
    (
        "expense-conference-priya",
        "expense_claim",
        """POLICY (Professional Development & Expenses):
- Conference registrations require written manager approval before registering.
- Software subscriptions costing more than $100 per year require IT approval before purchase.
- Personal items such as clothing, gym fees or personal electronics are not reimbursable.
- Business use of a personal car is reimbursed at $0.67 per mile. Commuting to your regular office is not reimbursable.
- Gifts to clients are limited to $50 per person per calendar year.

CLAIM (submitted by Priya Nair, Product Design, on October 9):
1. Registration for DesignWeek conference, October 2-3, registered on August 4: $695.00. Attached: email from her manager, Tom Ekwueme, dated August 1: "Yes, please register for DesignWeek - approved."
2. Annual subscription to a prototyping tool, purchased September 12: $240.00. Attached: IT approval ticket IT-9920, opened September 19 and approved September 20.
3. Mileage: home to the conference venue and back on both days, 84 miles in total at $0.67/mile: $56.28. The venue is in another city; Priya normally works at the Riverside office.
4. Gift basket for the client contact at Halden Foods, delivered October 4: $65.00. This is the first gift to this client contact this year.
5. Fleece jacket with the conference logo, bought at the venue shop: $40.00.""",
        [
            ("registration_preapproved", "Was the conference registration approved by the manager in writing before registering?", True),
            ("software_compliant", "Was the software subscription purchased in line with the IT approval rule?", False),
            ("mileage_correct", "Is the mileage amount calculated correctly at the policy rate?", True),
            ("gift_within_limit", "Is the client gift within the per-person gift limit?", False),
            ("has_personal_item", "Does the claim include a personal item that the policy says is not reimbursable?", True),
        ],
    ),
    (
        "refund-saas-annual",
        "refund_request",
        """REFUND POLICY (Teamboard subscriptions):
- Annual plans are refunded in full if the refund is requested within 14 days of purchase or renewal.
- After 14 days, an annual plan receives a prorated refund only if the service had a single outage longer than 24 hours during the current term. Otherwise no refund is given, but cancelling stops the next renewal charge.
- Monthly plans are non-refundable.
- Accounts terminated for violating the Terms of Service are not eligible for any refund.
- Refund requests must come from, or be confirmed in writing by, the account owner.

TICKET #20417 (opened September 20):
From: Tom Becker (workspace role: Member)
"Hi, our team has moved to another project tool, so we'd like to cancel Teamboard and get our money back for the year. The annual renewal of $1,188 went through on September 1. Thanks."
Reply in the same thread, September 20, from Alicia Grant (workspace role: Owner): "I agree with Tom - please cancel and refund if possible."

ACCOUNT RECORD: Plan: Business Annual, renewed September 1 for $1,188. Account status: in good standing, no Terms of Service warnings.
STATUS PAGE HISTORY (since September 1): one incident on September 9, "Degraded performance on boards", resolved after 2 hours. No other incidents.""",
        [
            ("within_14_days", "Was the refund requested within 14 days of the renewal?", False),
            ("qualifying_outage", "Did the service have an outage that qualifies for a prorated refund?", False),
            ("owner_confirmed", "Has the account owner confirmed the request in writing?", True),
            ("full_refund_eligible", "Is the customer eligible for a full refund under the policy?", False),
            ("cancel_stops_renewal", "Under the policy, will cancelling now stop the next renewal charge?", True),
            ("tos_disqualified", "Is the account disqualified from refunds because of a Terms of Service violation?", False),
        ],
    ),
    (
        "access-hr-admin-departing",
        "access_request",
        """ACCESS POLICY (HR Information System):
- The Administrator role may only be granted to HR staff at job level L3 or above.
- Every access request must state a business justification.
- Emergency "break-glass" access can be granted by the on-call security lead for at most 4 hours and must be logged; it must be requested explicitly as break-glass.
- Employees who are serving a notice period (they have resigned or been given notice) may not receive any new access or role upgrades.

REQUEST ACC-5120 (submitted Tuesday 09:40):
Requester: Marcus Webb, HR Business Partner, HR department, job level L4.
Requested: Administrator role in the HR Information System, standard (non-emergency) request, duration: permanent.
Justification: "Payroll run is Thursday. 30 employees in the Lisbon office have the wrong cost center after the reorg, and only admins can bulk-edit cost centers. I need admin rights to fix them before the run."
Manager approval: Sofia Lindqvist (Head of People) - approved.

HR RECORD for Marcus Webb: hired 2019; resignation submitted last Friday; notice period ends on the last day of next month. Current roles: HR Viewer, HR Editor.""",
        [
            ("is_hr_staff", "Is the requester a member of HR staff?", True),
            ("meets_level", "Does the requester meet the minimum job level for the Administrator role?", True),
            ("has_justification", "Does the request include a business justification?", True),
            ("notice_period_bar", "Is the requester barred from new access because they are serving a notice period?", True),
            ("is_break_glass", "Is this a request for emergency break-glass access?", False),
            ("approvable", "Can the request be approved as submitted under the policy?", False),
        ],
    ),
    (
        "moderation-blender-review",
        "content_moderation",
        """PRODUCT REVIEW GUIDELINES:
- Reviews must be based on the reviewer's own experience with the product.
- Incentivized reviews (free products, discounts, gift cards) are allowed only if the incentive is clearly disclosed in the review.
- Reviews may not contain URLs, email addresses or phone numbers.
- Profanity is automatically masked and is not by itself a reason to remove a review.
- Feedback that is only about shipping, delivery or the seller's service belongs in Seller Feedback, not in product reviews.
- Negative reviews are welcome and are never removed just for being negative.

REVIEW (product: VortaBlend 900 blender, rating: 1 out of 5, verified purchase):
"I bought this blender in January and used it almost every morning for smoothies. After three weeks the motor started smelling like burning plastic and then stopped completely. The glass jar is sturdy and the lid seals well, but the motor is just not built to last, and the 'crushes ice' claim is a joke - it struggled with four ice cubes from day one. The seller sent me a $10 gift card for leaving a review, but that didn't change my opinion at all. Honestly, save your money and look at the blenders on www.blenderdeals-now.com instead."

MODERATION NOTE: The review contains no phone numbers or email addresses.""",
        [
            ("own_experience", "Is the review based on the reviewer's own experience with the product?", True),
            ("contains_url", "Does the review contain a URL?", True),
            ("incentive_disclosed", "Does the reviewer disclose receiving an incentive for the review?", True),
            ("remove_for_negativity", "Should the review be removed because its rating is negative?", False),
            ("contains_contact", "Does the review contain an email address or phone number?", False),
            ("only_seller_feedback", "Is the review only about shipping or the seller's service rather than the product?", False),
        ],
    ),
]


def build_policy():
    rows = []
    for i, (case_id, _kind, text, questions) in enumerate(POLICY_CASES, 1):
        gid = f"policy-{i:02d}-{case_id}"
        rows.append({
            "id": gid,
            "group_id": gid,
            "task": "policy",
            "state": text.strip(),
            "questions": {
                qid: {"type": "noul", "instructions": q, "criteria": dict(NOUL_CRITERIA)}
                for qid, q, _ in questions
            },
            "labels": {qid: lab for qid, _, lab in questions},
        })
    return rows


# ---------------------------------------------------------------------------
# 4. severity.jsonl - incident / bug severity (score, 4 levels)
# ---------------------------------------------------------------------------

SEVERITY_INSTRUCTIONS = "How severe is the incident or bug described in this report?"

SEVERITY_LEVELS = [
    "cosmetic: visual or wording issue, no functional impact on users",
    "minor: something misbehaves, but a reasonable workaround exists or very few users are affected",
    "major: a feature is broken for many users with no practical workaround, but the service is otherwise up",
    "critical: outage of the whole service, data loss or corruption, or a security vulnerability",
]

SEVERITY_ITEMS = [
    # 0 cosmetic
    (0, "Typo on the pricing page: the plan toggle reads 'Anual' instead of 'Annual'."),
    (0, "On the profile settings page the 'Save' button sits 2px lower than the 'Cancel' button next to it. Both buttons work normally."),
    (0, "In dark mode, footer links use #9A9A9A instead of the #A0A0A0 from the design spec. They are readable and clickable."),
    (0, "The favicon looks blurry on high-DPI (Retina) displays."),
    (0, "The tooltip on the export icon says 'Export to CVS' instead of 'Export to CSV'. The export itself works."),
    (0, "The team photo on the About page is cropped slightly at the top on monitors wider than 2560px."),
    (0, "The loading spinner animation stutters for a moment in Safari; pages still load at normal speed."),
    (0, "The copyright line in the footer of our transactional emails still says 2023."),
    # 1 minor
    (1, "Clicking the Date column header in the invoices table doesn't sort the rows. Sorting via the 'Sort by' dropdown above the table works correctly."),
    (1, "The Ctrl+K search shortcut does nothing in Firefox. Clicking the search icon opens search as expected, and the shortcut works in Chrome and Safari."),
    (1, "When text is pasted from Microsoft Word into the comment box, bullet-point formatting is lost. Users can re-apply bullets with the toolbar."),
    (1, "CSV export fails with a timeout for reports over 50,000 rows. Exporting the same report in smaller date ranges works."),
    (1, "The unread badge on the mobile app occasionally shows a stale count until the user pulls down to refresh the inbox."),
    (1, "Profile pictures uploaded as HEIC files are not displayed. Uploading the same image as JPG or PNG works."),
    (1, "One customer on an old Windows 8.1 laptop with Internet Explorer 11 (unsupported) reports the settings page layout is broken. The page works in any supported browser."),
    # 2 major
    (2, "Since release 4.3 nobody can attach files to support tickets: the Attach button does nothing in every browser, and there is no other way to add attachments. All customers are affected; the rest of the help center works."),
    (2, "Search returns no results for any query containing non-ASCII characters (e.g. 'Muller' works, 'M\u00fcller' returns nothing). This affects most of our users in Germany and Japan. Browsing without search still works."),
    (2, "Scheduled reports have not been delivered to any customer since Monday's deploy, and the 'Send now' button fails with the same error. Dashboards themselves load fine."),
    (2, "Google Calendar sync stopped for all users after Google rotated its API certificate: events created in our app no longer appear in users' Google calendars. The in-app calendar still works."),
    (2, "Coupon codes are rejected at checkout for every customer since this morning's promotions service update. Customers can still buy at full price, but support cannot apply discounts manually either, so the spring campaign relying on coupons is blocked."),
    (2, "Every PDF invoice generated since June 1 downloads as a blank page. Customers and our finance team cannot obtain any recent invoices; there is no other export format."),
    (2, "Password reset emails are not being sent for any account hosted in the EU region (about 40% of our users). Affected users who forget their password cannot get back in until this is fixed; logins with a known password work."),
    (2, "The bulk CSV import of contacts fails with 'Unexpected error' for every file since release 2.8. Teams onboarding large contact lists cannot import them; the only alternative is adding contacts one at a time."),
    # 3 critical
    (3, "The web app and the API return HTTP 503 for all users in all regions since 09:12 UTC. Nobody can log in or use the product."),
    (3, "A database migration ran twice in production and deleted file attachments for about 12,000 projects. Last night's backup exists, but everything uploaded today is gone."),
    (3, "Any logged-in user can view other customers' invoices, including names and addresses, by changing the invoice ID in the URL."),
    (3, "Customer API keys are being written in plain text to the publicly accessible error-log page at /debug/errors."),
    (3, "The primary database ran out of disk space and switched to read-only mode. No user can save changes anywhere in the product."),
    (3, "Session tokens are not invalidated on logout. A token left on a shared library computer was reused by someone else to get full access to a customer's account."),
    (3, "Editing a document offline and then reconnecting overwrites the server copy with an empty file for all collaborators. Several customers have already lost days of work."),
]


def build_severity():
    rows = []
    for i, (level, text) in enumerate(SEVERITY_ITEMS, 1):
        rid = f"severity-{i:03d}"
        rows.append({
            "id": rid,
            "group_id": rid,
            "task": "severity",
            "state": text,
            "questions": {
                "severity": {
                    "type": "score",
                    "instructions": SEVERITY_INSTRUCTIONS,
                    "criteria": list(SEVERITY_LEVELS),
                }
            },
            "labels": {"severity": level},
        })
    return rows


# ---------------------------------------------------------------------------
# 5. code_search.jsonl - natural-language query -> implementing function (choice)
# ---------------------------------------------------------------------------

CODE_SEARCH_INSTRUCTIONS = (
    "Which of these functions implements what the search query asks for? "
    "Each option is described by its signature and docstring."
)

# (query, correct (name, desc), [3 distractors (name, desc)])
# The correct function is placed at position (index % 4) among the options so
# labels are spread evenly over option positions.
CODE_SEARCH_ITEMS = [
    (
        "check whether a string is a palindrome, ignoring case and punctuation",
        ("is_palindrome", 'def is_palindrome(text: str) -> bool:\n    """Return True if text reads the same forwards and backwards, ignoring case, spaces and punctuation."""'),
        [
            ("reverse_string", 'def reverse_string(text: str) -> str:\n    """Return the characters of text in reverse order."""'),
            ("count_vowels", 'def count_vowels(text: str) -> int:\n    """Count the vowels (a, e, i, o, u) in text, case-insensitively."""'),
            ("normalize_whitespace", 'def normalize_whitespace(text: str) -> str:\n    """Collapse runs of whitespace into single spaces and strip both ends."""'),
        ],
    ),
    (
        "parse an ISO 8601 date string into a datetime object",
        ("parse_iso_datetime", 'def parse_iso_datetime(value: str) -> datetime:\n    """Parse an ISO 8601 string such as \'2024-05-01T13:45:00Z\' into a timezone-aware datetime."""'),
        [
            ("format_datetime", 'def format_datetime(dt: datetime, fmt: str = "%Y-%m-%d %H:%M") -> str:\n    """Render a datetime as a string using the given strftime format."""'),
            ("days_between", 'def days_between(start: date, end: date) -> int:\n    """Return the number of whole days from start to end."""'),
            ("to_unix_timestamp", 'def to_unix_timestamp(dt: datetime) -> int:\n    """Convert a datetime to seconds since the Unix epoch."""'),
        ],
    ),
    (
        "compute the Levenshtein edit distance between two strings",
        ("edit_distance", 'def edit_distance(a: str, b: str) -> int:\n    """Minimum number of single-character insertions, deletions and substitutions needed to turn a into b."""'),
        [
            ("hamming_distance", 'def hamming_distance(a: str, b: str) -> int:\n    """Number of positions at which two equal-length strings differ. Raises ValueError if lengths differ."""'),
            ("longest_common_prefix", 'def longest_common_prefix(words: list[str]) -> str:\n    """Return the longest prefix shared by all strings in words."""'),
            ("jaccard_similarity", 'def jaccard_similarity(a: str, b: str) -> float:\n    """Size of the intersection over the size of the union of the two strings\' word sets."""'),
        ],
    ),
    (
        "retry a function call with exponential backoff when it raises",
        ("retry_with_backoff", 'def retry_with_backoff(fn: Callable[[], T], max_attempts: int = 5, base_delay: float = 0.5) -> T:\n    """Call fn, retrying on exception and doubling the sleep between attempts; re-raise after max_attempts."""'),
        [
            ("rate_limit", 'def rate_limit(calls_per_second: float) -> Callable:\n    """Decorator that sleeps as needed so the wrapped function is called at most calls_per_second times per second."""'),
            ("timeout_after", 'def timeout_after(seconds: float) -> Callable:\n    """Decorator that raises TimeoutError if the wrapped call takes longer than seconds."""'),
            ("memoize", 'def memoize(fn: Callable) -> Callable:\n    """Cache the results of fn keyed by its positional arguments."""'),
        ],
    ),
    (
        "split a list into consecutive chunks of size n",
        ("chunk_list", 'def chunk_list(items: list[T], size: int) -> list[list[T]]:\n    """Split items into consecutive, non-overlapping sublists of length size (the last one may be shorter)."""'),
        [
            ("sliding_window", 'def sliding_window(items: list[T], size: int) -> list[tuple[T, ...]]:\n    """Return every overlapping window of length size, advancing one element at a time."""'),
            ("flatten", 'def flatten(nested: list[list[T]]) -> list[T]:\n    """Concatenate a list of lists into a single flat list."""'),
            ("dedupe_preserve_order", 'def dedupe_preserve_order(items: list[T]) -> list[T]:\n    """Remove duplicates from items, keeping the first occurrence of each in original order."""'),
        ],
    ),
    (
        "read a CSV file into a list of dictionaries keyed by the header row",
        ("read_csv_records", 'def read_csv_records(path: str) -> list[dict[str, str]]:\n    """Read a CSV file and return one dict per row, using the header row as keys."""'),
        [
            ("write_csv_records", 'def write_csv_records(path: str, rows: list[dict[str, str]]) -> None:\n    """Write a list of dicts to a CSV file, using the keys of the first row as the header."""'),
            ("read_json_file", 'def read_json_file(path: str) -> Any:\n    """Load and return the JSON document stored at path."""'),
            ("count_lines", 'def count_lines(path: str) -> int:\n    """Return the number of lines in a text file."""'),
        ],
    ),
    (
        "compute the SHA-256 hash of a large file without loading it all into memory",
        ("sha256_file", 'def sha256_file(path: str, chunk_size: int = 65536) -> str:\n    """Return the hex SHA-256 digest of the file at path, reading it in chunks."""'),
        [
            ("sha256_string", 'def sha256_string(text: str) -> str:\n    """Return the hex SHA-256 digest of a UTF-8 encoded string."""'),
            ("file_size_bytes", 'def file_size_bytes(path: str) -> int:\n    """Return the size of the file at path in bytes."""'),
            ("gzip_file", 'def gzip_file(path: str) -> str:\n    """Compress the file at path with gzip and return the path of the .gz file."""'),
        ],
    ),
    (
        "validate that an email address is well formed",
        ("is_valid_email", 'def is_valid_email(address: str) -> bool:\n    """Return True if address has a valid local part, a single @ and a domain with a dot-separated TLD."""'),
        [
            ("extract_domain", 'def extract_domain(address: str) -> str:\n    """Return the part of an email address after the @ sign."""'),
            ("normalize_phone_number", 'def normalize_phone_number(raw: str, region: str = "US") -> str:\n    """Convert a phone number to E.164 format."""'),
            ("send_email", 'def send_email(to: str, subject: str, body: str) -> None:\n    """Send a plain-text email via the configured SMTP server."""'),
        ],
    ),
    (
        "merge two already sorted lists into a single sorted list",
        ("merge_sorted", 'def merge_sorted(a: list[T], b: list[T]) -> list[T]:\n    """Merge two ascending lists into one ascending list in O(len(a) + len(b)) time."""'),
        [
            ("binary_search", 'def binary_search(items: list[T], target: T) -> int:\n    """Return the index of target in the sorted list items, or -1 if absent."""'),
            ("sort_by_key", 'def sort_by_key(items: list[dict], key: str, reverse: bool = False) -> list[dict]:\n    """Return items sorted by the value stored under key."""'),
            ("union_sets", 'def union_sets(a: set[T], b: set[T]) -> set[T]:\n    """Return the set of elements that are in a, b or both."""'),
        ],
    ),
    (
        "convert a camelCase identifier to snake_case",
        ("camel_to_snake", 'def camel_to_snake(name: str) -> str:\n    """Convert camelCase or PascalCase (e.g. \'userId\') to snake_case (\'user_id\')."""'),
        [
            ("snake_to_camel", 'def snake_to_camel(name: str) -> str:\n    """Convert snake_case (e.g. \'user_id\') to camelCase (\'userId\')."""'),
            ("slugify", 'def slugify(text: str) -> str:\n    """Lowercase text and replace non-alphanumeric runs with hyphens for use in URLs."""'),
            ("title_case", 'def title_case(text: str) -> str:\n    """Capitalize the first letter of every word in text."""'),
        ],
    ),
    (
        "find the most frequent words in a piece of text",
        ("top_k_words", 'def top_k_words(text: str, k: int = 10) -> list[tuple[str, int]]:\n    """Return the k most common lowercase words in text with their counts, most frequent first."""'),
        [
            ("word_count", 'def word_count(text: str) -> int:\n    """Return the total number of words in text."""'),
            ("tokenize", 'def tokenize(text: str) -> list[str]:\n    """Split text into lowercase word tokens, dropping punctuation."""'),
            ("remove_stopwords", 'def remove_stopwords(tokens: list[str]) -> list[str]:\n    """Drop common English stopwords such as \'the\' and \'and\' from tokens."""'),
        ],
    ),
    (
        "distance in kilometers between two latitude/longitude points",
        ("haversine_km", 'def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:\n    """Great-circle distance between two points on Earth in kilometers, using the haversine formula."""'),
        [
            ("bearing_degrees", 'def bearing_degrees(lat1: float, lon1: float, lat2: float, lon2: float) -> float:\n    """Initial compass bearing in degrees from the first point to the second."""'),
            ("geocode_address", 'def geocode_address(address: str) -> tuple[float, float]:\n    """Look up the latitude and longitude of a street address."""'),
            ("to_radians", 'def to_radians(degrees: float) -> float:\n    """Convert an angle from degrees to radians."""'),
        ],
    ),
    (
        "return the items for a given page number and page size",
        ("paginate", 'def paginate(items: list[T], page: int, per_page: int = 20) -> list[T]:\n    """Return the slice of items shown on the 1-based page when showing per_page items per page."""'),
        [
            ("total_pages", 'def total_pages(total_items: int, per_page: int = 20) -> int:\n    """Return how many pages are needed to show total_items at per_page items per page."""'),
            ("truncate_text", 'def truncate_text(text: str, max_len: int, suffix: str = "...") -> str:\n    """Shorten text to at most max_len characters, adding suffix when cut."""'),
            ("sort_results", 'def sort_results(items: list[dict], field: str) -> list[dict]:\n    """Sort search results by the given field in descending order."""'),
        ],
    ),
    (
        "generate a random URL-safe token for password reset links",
        ("generate_reset_token", 'def generate_reset_token(nbytes: int = 32) -> str:\n    """Return a cryptographically secure, URL-safe random token (uses secrets.token_urlsafe)."""'),
        [
            ("hash_password", 'def hash_password(password: str, salt: bytes) -> str:\n    """Derive a PBKDF2-SHA256 hash of password with the given salt."""'),
            ("verify_password", 'def verify_password(password: str, stored_hash: str) -> bool:\n    """Check a password against a stored PBKDF2 hash in constant time."""'),
            ("weighted_choice", 'def weighted_choice(items: list[T], weights: list[float]) -> T:\n    """Pick one element of items at random with probability proportional to its weight."""'),
        ],
    ),
    (
        "recursively merge two nested dictionaries",
        ("deep_merge", 'def deep_merge(base: dict, override: dict) -> dict:\n    """Return a new dict where keys from override replace those in base, merging nested dicts recursively."""'),
        [
            ("flatten_dict", 'def flatten_dict(d: dict, sep: str = ".") -> dict:\n    """Turn a nested dict into a flat dict with keys joined by sep, e.g. {\'a.b\': 1}."""'),
            ("dict_diff", 'def dict_diff(a: dict, b: dict) -> dict:\n    """Return the keys whose values differ between a and b, mapped to (a_value, b_value)."""'),
            ("invert_dict", 'def invert_dict(d: dict) -> dict:\n    """Swap keys and values of d."""'),
        ],
    ),
    (
        "debounce a function so it only runs once calls have stopped for a given interval",
        ("debounce", 'def debounce(wait_seconds: float) -> Callable:\n    """Decorator that delays calls until wait_seconds have passed without a new call, then runs only the last one."""'),
        [
            ("throttle", 'def throttle(interval: float) -> Callable:\n    """Decorator that runs the wrapped function at most once per interval seconds, dropping calls in between."""'),
            ("memoize", 'def memoize(fn: Callable) -> Callable:\n    """Cache the results of fn keyed by its positional arguments."""'),
            ("retry_with_backoff", 'def retry_with_backoff(fn: Callable[[], T], max_attempts: int = 5, base_delay: float = 0.5) -> T:\n    """Call fn, retrying on exception and doubling the sleep between attempts; re-raise after max_attempts."""'),
        ],
    ),
    (
        "format a byte count as a human-readable size like 3.2 MB",
        ("human_readable_size", 'def human_readable_size(num_bytes: int) -> str:\n    """Format num_bytes using the largest fitting unit, e.g. 3355443 -> \'3.2 MB\'."""'),
        [
            ("parse_size", 'def parse_size(text: str) -> int:\n    """Parse a size string such as \'3.2 MB\' or \'512K\' into a number of bytes."""'),
            ("format_duration", 'def format_duration(seconds: float) -> str:\n    """Format a number of seconds as \'1h 02m 03s\'."""'),
            ("round_to", 'def round_to(value: float, digits: int = 2) -> float:\n    """Round value to the given number of decimal places."""'),
        ],
    ),
    (
        "check if a year is a leap year",
        ("is_leap_year", 'def is_leap_year(year: int) -> bool:\n    """Return True for Gregorian leap years: divisible by 4, except centuries not divisible by 400."""'),
        [
            ("days_in_month", 'def days_in_month(year: int, month: int) -> int:\n    """Return the number of days in the given month of the given year."""'),
            ("day_of_week", 'def day_of_week(d: date) -> str:\n    """Return the English weekday name of a date, e.g. \'Monday\'."""'),
            ("is_weekend", 'def is_weekend(d: date) -> bool:\n    """Return True if the date falls on a Saturday or Sunday."""'),
        ],
    ),
    (
        "remove duplicates from a list but keep the original order",
        ("dedupe_preserve_order", 'def dedupe_preserve_order(items: list[T]) -> list[T]:\n    """Remove duplicates from items, keeping the first occurrence of each in original order."""'),
        [
            ("sort_unique", 'def sort_unique(items: list[T]) -> list[T]:\n    """Return the distinct elements of items in ascending sorted order."""'),
            ("count_duplicates", 'def count_duplicates(items: list[T]) -> dict[T, int]:\n    """Map each element that appears more than once to its number of occurrences."""'),
            ("chunk_list", 'def chunk_list(items: list[T], size: int) -> list[list[T]]:\n    """Split items into consecutive, non-overlapping sublists of length size (the last one may be shorter)."""'),
        ],
    ),
    (
        "extract all URLs from a block of text",
        ("extract_urls", 'def extract_urls(text: str) -> list[str]:\n    """Return every http:// or https:// URL found in text, in order of appearance."""'),
        [
            ("is_valid_url", 'def is_valid_url(url: str) -> bool:\n    """Return True if url has a scheme and a network location."""'),
            ("strip_html_tags", 'def strip_html_tags(html: str) -> str:\n    """Remove all HTML tags from html and return the remaining text."""'),
            ("shorten_url", 'def shorten_url(url: str) -> str:\n    """Create a short link for url using the internal link-shortener service."""'),
        ],
    ),
]


def build_code_search():
    rows = []
    for i, (query, correct, distractors) in enumerate(CODE_SEARCH_ITEMS):
        options = list(distractors)
        options.insert(i % 4, correct)
        rid = f"code_search-{i + 1:03d}"
        rows.append({
            "id": rid,
            "group_id": rid,
            "task": "code_search",
            "state": query,
            "questions": {
                "function": {
                    "type": "choice",
                    "instructions": CODE_SEARCH_INSTRUCTIONS,
                    "criteria": {name: desc for name, desc in options},
                }
            },
            "labels": {"function": correct[0]},
        })
    return rows


# ---------------------------------------------------------------------------
# Writing and validation
# ---------------------------------------------------------------------------

BUILDERS = {
    "routing.jsonl": build_routing,
    "tools.jsonl": build_tools,
    "policy.jsonl": build_policy,
    "severity.jsonl": build_severity,
    "code_search.jsonl": build_code_search,
}


def write_jsonl(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _check_question(where: str, q: dict, label) -> list[str]:
    errs = []
    qtype = q.get("type")
    if not isinstance(q.get("instructions"), str) or not q["instructions"].strip():
        errs.append(f"{where}: missing instructions")
    crit = q.get("criteria")
    if qtype == "choice":
        if not isinstance(crit, dict) or not 2 <= len(crit) <= 8:
            errs.append(f"{where}: choice needs 2-8 options")
        elif not isinstance(label, str) or label not in crit:
            errs.append(f"{where}: label {label!r} is not an option")
        elif any(not k or k != k.strip() for k in crit):
            errs.append(f"{where}: bad option name")
    elif qtype == "noul":
        if crit is not None and (not isinstance(crit, dict) or set(crit) != {"true", "false"}):
            errs.append(f"{where}: noul criteria must have keys true/false")
        if not isinstance(label, bool):
            errs.append(f"{where}: noul label must be a JSON boolean, got {label!r}")
    elif qtype == "score":
        if not isinstance(crit, list) or not 2 <= len(crit) <= 10:
            errs.append(f"{where}: score needs 2-10 levels")
        elif isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(crit):
            errs.append(f"{where}: score label {label!r} out of range")
    else:
        errs.append(f"{where}: unknown question type {qtype!r}")
    return errs


def validate_file(path: Path):
    """Return (errors, rows) for one jsonl file."""
    errs: list[str] = []
    rows = []
    ids = set()
    group_states: dict[str, object] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            where = f"{path.name}:{n}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                errs.append(f"{where}: invalid JSON ({e})")
                continue
            rows.append(row)
            for key in ("id", "group_id", "task", "state", "questions", "labels"):
                if key not in row:
                    errs.append(f"{where}: missing key {key!r}")
            if errs and errs[-1].startswith(where):
                continue
            if row["id"] in ids:
                errs.append(f"{where}: duplicate id {row['id']!r}")
            ids.add(row["id"])
            if not isinstance(row["state"], (str, dict)) or not row["state"]:
                errs.append(f"{where}: state must be a non-empty string or object")
            prev = group_states.setdefault(row["group_id"], row["state"])
            if prev != row["state"]:
                errs.append(f"{where}: group_id {row['group_id']!r} used with different states")
            qs, labels = row["questions"], row["labels"]
            if not qs or set(qs) != set(labels):
                errs.append(f"{where}: questions and labels must have the same non-empty key set")
                continue
            for qid, q in qs.items():
                errs.extend(_check_question(f"{where}[{qid}]", q, labels[qid]))
    return errs, rows


def summarize(name: str, rows) -> str:
    dist: Counter = Counter()
    n_dec = 0
    for row in rows:
        for qid, lab in row["labels"].items():
            n_dec += 1
            dist[json.dumps(lab)] += 1
    parts = ", ".join(f"{k}={v}" for k, v in sorted(dist.items()))
    return f"{name:<18} lines={len(rows):<3} decisions={n_dec:<3} labels: {parts}"


def main(argv: list[str]) -> int:
    check_only = "--check" in argv
    if not check_only:
        for name, builder in BUILDERS.items():
            write_jsonl(HERE / name, builder())
    all_errs: list[str] = []
    total = 0
    for name in BUILDERS:
        errs, rows = validate_file(HERE / name)
        all_errs.extend(errs)
        total += sum(len(r["labels"]) for r in rows)
        print(summarize(name, rows))
    # extra sanity: policy states should be 150-400 words
    for row in build_policy():
        words = len(row["state"].split())
        if not 150 <= words <= 400:
            all_errs.append(f"policy {row['id']}: state has {words} words (want 150-400)")
    print(f"total labeled decisions: {total}")
    if all_errs:
        print("VALIDATION FAILED:", file=sys.stderr)
        for e in all_errs:
            print("  " + e, file=sys.stderr)
        return 1
    print("validation OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
