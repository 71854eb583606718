"""Every sentence Sift says to a person, in one place, so that tone and wording stay consistent."""

from __future__ import annotations

from datetime import datetime

from rag.i18n import current, tr

NO_ANSWER = "I couldn't find an answer to that in the knowledge base."
NOT_INDEXED_YET = (
    "I couldn't find an answer to that yet, but I'm still reading the knowledge base for the "
    "first time: please ask again once that is done (usually a few minutes)."
)
NO_ANSWER_SUGGESTIONS = "You may want to look at:"
DEGRADED_NOTE = "Note: I couldn't fully check these sources, so treat this answer with care."
UNCHECKED_NO_ANSWER_NOTE = (
    "Note: I couldn't check every source, so the knowledge base may cover this after all."
)
EXTRACTIVE_LABEL = "Here are the most relevant excerpts I found (quoted, not summarised):"
# Under a quoted source that looks like the answer but never says some of the question's words
# (the staging page quoted for a question about production).
NOT_MENTIONED = "_This source does not mention {words}._"
LLM_DOWN_NOTE = (
    "The language model is unavailable right now, so these are the closest excerpts, unchecked."
)
WITHHELD_NOTE = (
    "The written answer was withheld because it repeated my instructions; these are the "
    "closest excerpts instead."
)
UNCITED_NOTE = "Note: parts of this answer are not backed by a cited source."
GREETING_REPLY = (
    "Hi! Ask me anything about our processes, policies or systems and I'll answer from the "
    "knowledge base, with sources."
)
THANKS_REPLY = "You're welcome! Ask me anytime."
ABOUT_BOT_REPLY = (
    "I'm Sift. I search the company knowledge base, read every result to check that it really "
    "answers your question, and reply only from what passed, citing my sources. React with 👍 "
    "or 👎 on an answer to tell me how I did."
)
EMPTY_QUESTION = "Please ask a question; I didn't find one in your message."
TOO_LONG = "That message is too long for me ({length} characters; the limit is {limit})."
QUOTA_EXCEEDED = (
    "You've asked {limit} questions in the last minute; please wait a moment before asking more."
)
INTERNAL_ERROR = "Something went wrong on my side."
DISK_FULL = (
    "Sift's disk is full, so I can't save anything right now; please tell whoever runs Sift.")
DATABASE_DOWN = (
    "I couldn't save that: Sift's database is unreachable right now; please try again in a "
    "few minutes.")
ERROR_REFERENCE = "{message} (reference: {correlation_id})"
FEEDBACK_THANKS = "Thanks for the feedback!"
DOWNVOTE_PROMPT = "Thanks. What was missing or wrong? Reply in this thread and I'll pass it on."
COMMENT_THANKS = "Thanks, I've noted that for the knowledge team."
UNKNOWN_ANSWER_FEEDBACK = "I couldn't find the answer this feedback is about."
BUSY = "I'm answering a lot of questions right now; please ask again in a minute."
CHANNEL_OFF = "I'm switched off in this channel; ask me in a direct message instead."
NOBODY_TO_CALL = "Nobody is set up to help in this channel; please ask your team directly."
SHARE_BLOCKED = (
    "This answer can't be shared here: a source it was written from is not visible to "
    "everyone in the channel.")
SHARE_LABEL = "Share to channel"
HELP_LABEL = "Still need help?"
SHARE_UNAVAILABLE = "I can't share that answer any more; please ask again."
ASSISTANT_TITLE = "Ask Sift"
ESCALATION = "{people}: {asker} still needs help with this question."
ESCALATION_SENT = "I've asked the people who look after this channel to help."
ANSWER_CAPTURED = ("Thanks: I've saved that reply as an answer for the knowledge team to "
                   "review; once approved, I'll answer this question with it.")
ANSWER_NOT_CAPTURABLE = ("Only a person's reply inside a thread can be saved as an answer; "
                         "pick a reply under the question.")
ANSWER_CAPTURED_APPROVED = ("Thanks: I've saved that reply as an answer, and since it comes "
                            "from one of this channel's experts, I'll answer with it from now "
                            "on.")
ANSWER_SAVING = ("I'm saving that reply as an answer for the knowledge team to review; it will "
                 "be in their list in a moment.")
CAPTURE_OFF = "Saving replies as answers is not set up on this Sift."
SAVE_OFFER = ("Did {replier}'s reply solve it? Save it as the answer, and once the knowledge "
              "team approves it I'll answer this question with it next time.")
SAVE_OFFER_LABEL = "Save as the answer"
SAVE_NOT_YOURS = ("Only the person who asked can save a reply as the answer here, and only "
                  "while the question is open; anyone can use \"Save to Sift\" on a reply.")
TEAMS_THREAD_UNREADABLE = ("I can't read this thread, so nothing was saved: Sift needs Microsoft "
                           "Graph access to the team (the bot's app, or a Teams source).")

# Slack: the working status, the block labels and the feedback buttons' accessible names.
WORKING_STATUS = "is reading the knowledge base…"
SOURCES_HEADING = "Sources"
ANSWER_SHORTENED = "This answer was shortened to fit in one message."
FEEDBACK_UP_LABEL = "Mark this answer as helpful"
FEEDBACK_DOWN_LABEL = "Mark this answer as not helpful"

# Teams: the progress line shown while an answer streams in a personal chat.
TEAMS_WORKING = "Searching the knowledge base and checking what I find…"

# Files attached to a question (bot/chat/files.py): one sentence each, above the answer.
FROM_SCREENSHOT = "From your screenshot: `{text}`"
FILE_TOO_LARGE = "I could not read {name}: it is larger than the {limit} I read, so this " \
    "answers your text alone."
FILE_UNREADABLE = "I could not read {name}: it is damaged or not what it claims to be, so " \
    "this answers your text alone."
FILE_UNSUPPORTED = "I could not read {name}: I read images, text files and PDFs, so this " \
    "answers your text alone."
FILE_NO_TEXT = "I found no text in {name}, so this answers your text alone."
FILES_OFF = "Reading attached files is turned off here, so this answers your text alone."
FILES_TOO_MANY = "I read the first {limit} attached files only."
ATTACHED_ONLY = "What does the attached file show?"
ASKED_IN_PERSONAL_CHAT = "Sift is answering you about this message in your chat with Sift."


# Under an answer to a question in another language than the documents', without a model to
# add search phrases in theirs (docs/languages.md).
RETRIEVAL_LANGUAGE_NOTE = (
    "Note: the knowledge base is written in {language}, and I find the most when you ask in "
    "{language}.")
UNVERIFIED_NEVER = ("_Source [{n}] has never been verified by its owner and is past its review "
                    "date._")
UNVERIFIED_SINCE = "_Source [{n}] was last verified on {date} and is past its review date._"


def with_reference(message: str, correlation_id: str) -> str:
    """In the person's language (rag/i18n.py), as every sentence built here."""
    return tr(ERROR_REFERENCE).format(message=tr(message), correlation_id=correlation_id)


def unverified_note(n: int, last: datetime | None) -> str:
    """Under an answer citing source [n] past its review date (still used, said so)."""
    if last is None:
        return tr(UNVERIFIED_NEVER).format(n=n)
    if current() == "en":
        return tr(UNVERIFIED_SINCE).format(n=n, date=f"{last.day} {last:%b %Y}")
    from babel.dates import format_date

    return tr(UNVERIFIED_SINCE).format(n=n, date=format_date(last, "d MMM y", locale=current()))
