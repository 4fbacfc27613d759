"""What every domain draws from: names, cities, dates, money, the two question shapes, and the text helpers."""

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
