"""The nine domains of the benchmark workload, one module each: a function `f(r)` of a seeded `random.Random` that
returns (state text, noul questions, choice questions).

`support` (customer support transcripts), `incidents` (incident postmortems), `insurance` (insurance claims),
`hr_cases` (HR policy cases), `code_review` (code review notes), `contracts` (contract clauses), `medical_admin`
(medical-admin triage notes, administrative and non-diagnostic), `procurement` (procurement requests),
`security_alerts` (security alert logs); `pieces`: the names, dates, money, question shapes and text helpers they share.
"""
