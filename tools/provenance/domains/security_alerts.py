"""Domain 9: security alert logs."""

from .pieces import C, FIRST, LAST, N, date, fill, person, yn

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
