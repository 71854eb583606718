"""A tiny BEIR dataset whose right answers can be worked out by hand (for the end-to-end eval)."""

from __future__ import annotations

import json
from pathlib import Path

DOCS = {
    "d01": ("Rotating zephyrine signing keys",
            "Zephyrine signing keys rotate every ninety days. Run `zk rotate --all` from the "
            "bastion host, then confirm the new fingerprint in the audit log."),
    "d02": ("Booking meeting rooms",
            "Meeting rooms are booked in the calendar app. Large rooms need two days notice "
            "and the booking must name a host."),
    "d03": ("Travel expense claims",
            "Submit travel expense claims within thirty days of the trip, with every receipt "
            "attached. Finance pays approved claims with the next salary."),
    "d04": ("Laptops for new starters",
            "New starters receive a laptop on their first morning. IT installs the standard "
            "image and enrols the device in management."),
    "d05": ("Incident severity levels",
            "A severity one incident means customers cannot use the product. Page the on-call "
            "engineer at once and open a bridge call."),
    "d06": ("Database backup schedule",
            "Databases are backed up every night at two o'clock. Backups are kept for five "
            "weeks and restored in a drill every quarter."),
    "d07": ("Connecting to the VPN",
            "Install WireGuard, import the profile from the IT portal and sign in with single "
            "sign-on to reach internal systems from home."),
    "d08": ("Parental leave",
            "New parents get sixteen weeks of paid parental leave. Tell your manager and the "
            "people team at least eight weeks before the leave starts."),
    "d09": ("Code review guidelines",
            "Every change needs one approving review. Reviewers check tests, naming and the "
            "rollback plan before they approve."),
    "d10": ("Releasing the mobile app",
            "Mobile releases ship every second Tuesday. The release captain builds the "
            "candidate, runs the smoke tests and submits it to the stores."),
    "d11": ("Office plants",
            "The office plants are watered on Mondays and Thursdays by whoever is on the "
            "kitchen rota that week."),
    "d12": ("Choosing a password manager",
            "Use the company password manager for every shared credential. Personal password "
            "managers must not hold company secrets."),
}

# (id, question, reference answer, relevant documents with their gains, the word the fake
# grader looks for in a relevant excerpt)
QUERIES = [
    ("q1", "How often do zephyrine signing keys rotate?", "Every ninety days.",
     {"d01": 1}, "zephyrine"),
    ("q2", "How do I recalibrate the flux capacitor array?", "Recalibrate it monthly.",
     {"d99": 1}, "capacitor"),  # d99 is not in the corpus: nothing can find it
    ("q3", "How long do I have to submit a travel expense claim?", "Thirty days.",
     {"d03": 1}, "expense"),
    ("q4", "What should I do during a severity one incident?",
     "Page the on-call engineer and open a bridge call.", {"d05": 1}, "severity"),
    ("q5", "How do I connect to the VPN from home?",
     "Install WireGuard, import the profile and sign in.", {"d07": 1}, "wireguard"),
    ("q6", "How many weeks of parental leave do new parents get?", "Sixteen weeks.",
     {"d08": 2, "d01": 1}, "parental"),
]
MARKERS = {question: marker for _, question, _, _, marker in QUERIES}


def write_beir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for doc_id, (title, text) in DOCS.items():
            handle.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for query_id, text, answer, _, _ in QUERIES:
            handle.write(json.dumps({"_id": query_id, "text": text, "answer": answer}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{g}" for q, _, _, relevant, _ in QUERIES for d, g in relevant.items()]
    (root / "qrels.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root
