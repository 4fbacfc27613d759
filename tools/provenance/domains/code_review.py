"""Domain 5: code review notes."""

from .pieces import C, N, WEEKDAYS, fill, person, yn

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
