// The web chat: sends a question, shows the answer while it is written (server-sent events
// over fetch), then the final answer with its sources and the 👍 / 👎 buttons.
"use strict";

const csrf = document.querySelector('meta[name="sift-csrf"]').content;
const log = document.getElementById("log");
const form = document.getElementById("ask");
const field = document.getElementById("question");
const send = document.getElementById("send");
const picker = document.getElementById("attach");
const shelf = document.getElementById("attached");
let attached = []; // { name, type, data }: files read as base64, sent with the next question

function turn(kind, html) {
  const node = document.createElement("div");
  node.className = "turn " + kind;
  node.innerHTML = html; // every fragment is rendered and escaped by the server
  log.appendChild(node);
  node.scrollIntoView({ block: "end" });
  return node;
}

function escapeText(text) {
  const node = document.createElement("div");
  node.textContent = text;
  return node.innerHTML;
}

async function post(path, body) {
  return fetch(path, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ ...body, csrf }),
  });
}

function votes(node, ref) {
  const box = document.createElement("div");
  box.className = "votes";
  // The words beside the emoji: a font without them still says what each button does.
  for (const [label, value, name] of [["👍", 1, "helpful"], ["👎", -1, "not helpful"]]) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label + " " + name.charAt(0).toUpperCase() + name.slice(1);
    button.setAttribute("aria-label", "Mark this answer as " + name);
    button.dataset.vote = String(value);
    button.addEventListener("click", async () => {
      const reply = await post("/chat/vote", { ref, vote: value });
      box.querySelectorAll("button").forEach((b) => b.setAttribute("aria-pressed", "false"));
      button.setAttribute("aria-pressed", "true");
      const said = reply.ok ? (await reply.json()).html : escapeText(await reply.text());
      box.querySelector(".said")?.remove();
      box.insertAdjacentHTML("beforeend", '<span class="said note">' + said + "</span>");
    });
    box.appendChild(button);
  }
  node.appendChild(box);
}

function handle(event, data, state) {
  if (event === "working" && !state.node) {
    state.node = turn("answer working", escapeText(data.text));
  } else if (event === "preview") {
    state.node.className = "turn answer live";
    state.node.innerHTML = data.html;
  } else if (event === "answer") {
    state.node.className = "turn answer " + data.status;
    state.node.innerHTML = data.html;
    if (data.ref) votes(state.node, data.ref);
    state.node.scrollIntoView({ block: "end" });
  } else if (event === "notice" || event === "error") {
    if (state.node) state.node.remove();
    state.node = turn("answer " + event, data.html);
  }
}

function base64Of(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

function showAttached() {
  shelf.replaceChildren();
  attached.forEach((file, n) => {
    const chip = document.createElement("span");
    chip.className = "file";
    chip.textContent = "📎 " + file.name;
    const drop = document.createElement("button");
    drop.type = "button";
    drop.textContent = "✕";
    drop.setAttribute("aria-label", "Remove " + file.name);
    drop.addEventListener("click", () => { attached.splice(n, 1); showAttached(); });
    chip.appendChild(drop);
    shelf.appendChild(chip);
  });
}

async function attach(files) {
  for (const file of files) {
    // A pasted screenshot comes nameless ("image.png"): the server reads what it is.
    attached.push({ name: file.name || "pasted image", type: file.type,
                    data: await base64Of(file) });
  }
  showAttached();
}

async function ask(question, files) {
  const names = files.map((f) => "📎 " + f.name).join(" ");
  turn("question", escapeText([question, names].filter(Boolean).join("\n")));
  const reply = await post("/chat/ask", { question, files });
  const state = { node: null };
  if (!reply.ok) {
    turn("answer error", escapeText(reply.status === 413
      ? "That file is too large to send here." : await reply.text()));
    return;
  }
  const reader = reply.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data) handle(event, JSON.parse(data), state);
    }
  }
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const question = field.value.trim();
  const files = attached;
  if (!question && !files.length) return;
  field.value = "";
  attached = [];
  showAttached();
  send.disabled = true;
  try {
    await ask(question, files);
  } catch (error) {
    turn("answer error", escapeText("Sift could not be reached: " + error));
  } finally {
    send.disabled = false;
    field.focus();
  }
});

field.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    form.requestSubmit();
  }
});

picker.addEventListener("change", async () => {
  await attach(picker.files);
  picker.value = "";
});

field.addEventListener("paste", async (event) => {
  const files = [...(event.clipboardData?.files || [])];
  if (!files.length) return; // text pastes as text
  event.preventDefault();
  await attach(files);
});

document.addEventListener("dragover", (event) => {
  event.preventDefault();
  document.body.classList.add("dropping");
});
document.addEventListener("dragleave", () => document.body.classList.remove("dropping"));
document.addEventListener("drop", async (event) => {
  event.preventDefault();
  document.body.classList.remove("dropping");
  await attach(event.dataTransfer?.files || []);
});
