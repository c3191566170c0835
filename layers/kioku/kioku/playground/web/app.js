// The kioku inspector: polls /api/state every second and acts through /api/say and /api/command.
"use strict";

const POLL_MS = 1000;
const view = { channel: "general", member: "alice", selected: null, pinned: false, lastJson: "", pending: [],
  lastLogId: 0 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const $ = (id) => document.getElementById(id);
const kindClass = (kind) => "kind-" + String(kind).replace(/[^a-z]+/gi, "-").toLowerCase();

async function poll() {
  try {
    const response = await fetch("/api/state?channel=" + encodeURIComponent(view.channel) +
      "&member=" + encodeURIComponent(view.member));
    const text = await response.text();
    if (response.ok && text !== view.lastJson) {
      view.lastJson = text;
      render(JSON.parse(text));
    }
  } catch (error) {
    $("busy").hidden = false;
    $("busy").textContent = "the playground is not answering";
  }
}

// ``typed``: the action was typed in the composer, where its refusal is then shown (and the line
// given back to be corrected), not only in the console pane.
async function act(path, body, typed = false) {
  const line = body.text || body.line || path;
  const channel = view.channel;
  view.pending.push(line);
  $("busy").hidden = false;
  if (typed) showComposerError(null);
  try {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ channel, member: view.member, ...body }),
    });
    const answer = await response.json();
    if (!response.ok && answer.error) localLog(channel, line, answer.error);
    if (!response.ok && typed && channel === view.channel) refusedInComposer(line, answer.error || answer.output);
  } catch (error) {
    localLog(channel, line, String(error));
    if (typed && channel === view.channel) refusedInComposer(line, String(error));
  } finally {
    view.pending.splice(view.pending.indexOf(line), 1);
    view.pinned = false;
    view.lastJson = "";
    poll();
  }
}

// Refusals the server did not log (bad input), placed in the console after what it had logged then.
const localErrors = [];
function localLog(channel, line, error) {
  localErrors.push({ channel, line, output: "! " + error, ok: false, after: view.lastLogId });
}

function refusedInComposer(line, message) {
  showComposerError(message || `${line}: refused`);
  if (!$("text").value) $("text").value = line;
}

function showComposerError(message) {
  $("composer-error").hidden = !message;
  $("composer-error").textContent = message || "";
}

function render(state) {
  $("clock").textContent = state.clock;
  $("busy").hidden = !(state.busy || view.pending.length);
  $("busy").textContent = "working…";
  renderChannels(state);
  renderMessages(state);
  renderLog(state.log);
  renderStm(state.stm, state.stm_others || [], state);
  renderLtm(state.ltm);
  renderRounds(state);
  renderForm(state.form);
}

function renderChannels(state) {
  const current = state.channels.find((channel) => channel.key === state.channel);
  const item = (channel) =>
    el("li", { class: channel.key === state.channel ? "selected" : "", "data-channel": channel.key,
      onclick: () => select(channel) },
    channel.kind === "dm" ? "@ " : channel.kind === "thread" ? "↳ " : "# ",
    channel.kind === "dm" ? channel.label : channel.key, channel.private ? el("span", { class: "chip" }, "private") : null);
  $("channels").replaceChildren(...state.channels.filter((c) => c.kind !== "dm").map(item));
  $("dms").replaceChildren(...state.channels.filter((c) => c.kind === "dm").map(item));
  const members = $("member");
  if (members.options.length !== state.members.length) {
    members.replaceChildren(...state.members.map((m) => el("option", { value: m.key }, m.name)));
  }
  members.value = view.member;
  // A DM is its owner's: the speaker stays whom you picked, and writes only in their own DM.
  const elsewhere = current.owner && current.owner !== view.member;
  const owner = elsewhere ? state.members.find((m) => m.key === current.owner) : null;
  $("text").disabled = $("send").disabled = Boolean(elsewhere);
  $("text").placeholder = elsewhere
    ? `Only ${owner.name} writes in this DM: speak as ${owner.name} to write here`
    : "Say something (@kioku …), a /slash command (option:value) or a :console line";
  $("channel-title").textContent = current.label;
  const guildChannel = current.kind === "channel";
  $("make-private").disabled = !guildChannel || current.private;
  $("make-public").disabled = !guildChannel || !current.private;
}

function select(channel) {
  if (channel.key !== view.channel) showComposerError(null);
  view.channel = channel.key;
  view.selected = null;
  view.pinned = false;
  view.lastJson = "";
  poll();
}

function renderMessages(state) {
  const list = $("messages");
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  // a new message (an answer included) is scrolled to, as Discord does; reading back up is left alone
  const newest = state.messages.length ? state.messages[state.messages.length - 1].id : null;
  const arrived = newest !== null && newest !== view.newest;
  view.newest = newest;
  const replies = state.messages.filter((m) => m.turn);
  if (!view.pinned || !replies.some((m) => m.id === view.selected)) {
    view.selected = replies.length ? replies[replies.length - 1].id : null;
  }
  if (!state.messages.length) {
    list.replaceChildren(firstPageHint(state));
    return;
  }
  list.replaceChildren(...state.messages.map((message) => {
    const turn = message.turn ? state.turns[message.turn] : null;
    const classes = ["message", message.bot ? "bot" : "", turn ? "turn" : "", message.id === view.selected ? "selected" : "",
      message.answer ? "answer" : "", message.answer && message.answer.ephemeral ? "ephemeral" : ""];
    return el("li", {
      class: classes.join(" "), "data-id": message.id, "data-turn": message.turn,
      onclick: turn ? () => { view.selected = message.id; view.pinned = true; render(JSON.parse(view.lastJson)); } : null,
    },
    // a persona's avatar lives on another host, which the page's policy does not fetch: its initial
    message.avatar_url ? el("span", { class: "avatar", title: message.avatar_url }, (message.author || "?").slice(0, 1)) : null,
    el("span", { class: "author" }, message.author),
    message.persona ? el("span", { class: "chip persona", title: "an alter persona, through kioku's webhook" }, "persona") : null,
    el("span", { class: "time" }, (message.timestamp || "").slice(0, 16).replace("T", " ")),
    turn && turn.persona ? el("span", { class: "chip lineage", title: "who spoke, and whose long-term memories it read" },
      `${turn.persona} · lineage ${turn.lineage}`) : null,
    turn ? el("span", { class: "chip", title: "the model requests of the turn that posted this" },
      `turn ${turn.number} · ${requestsText(turn)} ▸`) : null,
    message.answer ? renderAnswerHead(message.answer) : null,
    message.content ? el("div", { class: "content" }, message.content) : null,
    message.embeds.map(renderEmbed),
    message.attachments.map((name) => el("div", { class: "meta" }, `[attached file: ${name}]`)),
    message.answer ? renderButtons(message.answer) : null,
    turn && !message.answer ? whyButton(message) : null,  // replies only, not memory notices
    !message.bot && !message.persona && !message.answer ? rememberButton(message) : null);
  }));
  if (atBottom || arrived) list.scrollTop = list.scrollHeight;
}

// How many model requests a turn made, and why none when it made none.
function requestsText(turn) {
  if (!turn.rounds.length && turn.rate_limited) return "rate-limited: no model request";
  if (!turn.rounds.length && turn.duplicate) return "already answered: no model request";
  return `${turn.rounds.length} model request${turn.rounds.length === 1 ? "" : "s"}`;
}

// What an empty conversation says: how to start.
function firstPageHint(state) {
  const current = state.channels.find((channel) => channel.key === state.channel);
  const owner = current.owner && current.owner !== view.member && state.members.find((m) => m.key === current.owner);
  if (owner) {
    return el("li", { class: "hint", id: "hint" }, el("strong", {}, "Nothing said here yet. "),
      `Only ${owner.name} writes in this DM: pick ${owner.name} under Speaking as to start.`);
  }
  const example = "@kioku remember that the picnic is on Saturday";
  const tryIt = (text) => el("code", { class: "try", title: "click to put it in the box below",
    onclick: () => { $("text").value = text; $("text").focus(); } }, text);
  return el("li", { class: "hint", id: "hint" },
    el("strong", {}, `Nothing said in ${current.label} yet. `),
    "To start, type a message that mentions the bot in the box below, like ", tryIt(example),
    ", then click kioku's reply to see what the model was sent. Slash commands work as in Discord (",
    tryIt("/help stm"), "), and ", tryIt(":help"), " lists the console's commands.");
}

function renderAnswerHead(answer) {
  return el("div", { class: "answer-head" },
    el("span", { class: "used", title: answer.line }, `${answer.by} used ${answer.used}`),
    answer.ephemeral ? el("span", { class: "chip only-you", title: "an ephemeral answer" }, "Only you can see this") : null);
}

// The message command "Why this answer?", as a message's Apps menu offers it on every reply: its
// answer (only the member asking sees it) marks the memories they may not see.
function whyButton(message) {
  return el("div", { class: "buttons" }, el("button", {
    class: "component style-2 why", "data-why": message.id, title: "Apps › Why this answer?",
    onclick: (event) => { event.stopPropagation(); act("/api/command", { line: ":why " + message.id }); },
  }, "Why this answer?"));
}

// The message command "Remember this" on someone's message: one's own becomes a memory about
// oneself, another's a server memory said in this channel.
function rememberButton(message) {
  return el("div", { class: "buttons" }, el("button", {
    class: "component style-2 why", "data-remember": message.id, title: "Apps › Remember this",
    onclick: (event) => { event.stopPropagation(); act("/api/command", { line: ":remember " + message.id }); },
  }, "Remember this"));
}

function renderButtons(answer) {
  if (!answer.buttons.length) return null;
  return el("div", { class: "buttons" }, answer.buttons.map((row) => el("div", { class: "row" },
    row.map((button) => el("button", {
      class: "component style-" + button.style, disabled: button.disabled, "data-custom-id": button.custom_id,
      onclick: (event) => { event.stopPropagation(); act("/api/click", { answer: answer.id, button: button.custom_id, line: ":click " + button.label }); },
    }, button.label)))));
}

function renderForm(form) {
  const box = $("form");
  if (!form) {
    box.hidden = true;
    box.dataset.form = "";
    return;
  }
  if (box.dataset.form === form.custom_id && !box.hidden) return; // keep what is being typed
  box.dataset.form = form.custom_id;
  box.hidden = false;
  const inputs = form.fields.map((field) => {
    const attrs = { id: "field-" + field.id, name: field.id, "data-field": field.id, placeholder: field.placeholder || null,
      maxlength: field.max_length || null, required: field.required };
    const input = field.long ? el("textarea", { ...attrs, rows: 5 }) : el("input", attrs);
    input.value = field.value;
    return el("label", {}, el("span", {}, field.label), input);
  });
  const submit = (event) => {
    event.preventDefault();
    const fields = {};
    for (const input of box.querySelectorAll("[data-field]")) fields[input.dataset.field] = input.value;
    box.hidden = true;
    act("/api/form", { fields, line: ":submit " + form.title });
  };
  box.replaceChildren(el("form", { class: "modal", onsubmit: submit },
    el("h2", {}, form.title), inputs,
    el("div", { class: "actions" },
      el("button", { type: "button", class: "cancel", onclick: () => { box.hidden = true; act("/api/form", { fields: null, line: "(form closed)" }); } }, "Cancel"),
      el("button", { type: "submit", id: "form-submit" }, "Submit"))));
}

function renderEmbed(embed) {
  return el("div", { class: "embed" },
    embed.title ? el("div", { class: "title" }, embed.title) : null,
    embed.description ? el("div", { class: "description" }, embed.description) : null,
    embed.fields.map((field) => [el("div", { class: "name" }, field.name), el("div", { class: "value" }, field.value)]),
    embed.footer ? el("div", { class: "footer" }, embed.footer) : null);
}

// Oldest first, like the conversation: the newest at the bottom, scrolled into view.
function renderLog(log) {
  view.lastLogId = log.length ? log[log.length - 1].id : view.lastLogId;
  const order = (entry) => (entry.id !== undefined ? entry.id : entry.after + 0.5);
  const entries = [...log, ...localErrors].filter((entry) => entry.channel === view.channel)
    .sort((a, b) => order(a) - order(b)).slice(-12);
  const box = $("console-log");
  const shown = $("log").dataset.shown;
  $("log").dataset.shown = entries.map(order).join(",");
  $("log").replaceChildren(...entries.map((entry) =>
    el("li", { class: entry.ok ? "" : "failed" }, el("div", { class: "line" }, "> " + entry.line),
      entry.output ? el("pre", {}, entry.output) : null)));
  if (shown !== $("log").dataset.shown) box.scrollTop = box.scrollHeight;
}

function keepOpen(container, build) {
  const open = new Set([...container.querySelectorAll("[data-key]")]
    .filter((node) => node.open || node.classList.contains("expanded")).map((node) => node.dataset.key));
  build();
  for (const node of container.querySelectorAll("[data-key]")) {
    if (!open.has(node.dataset.key)) continue;
    if (node.tagName === "DETAILS") node.open = true; else node.classList.add("expanded");
  }
}

function renderStm(stm, others, state) {
  const box = $("stm");
  if (!stm) {
    $("stm-meta").textContent = "";
    box.replaceChildren(el("p", { class: "empty" }, "No short-term memory in this channel yet."));
    return;
  }
  $("stm-meta").textContent = (others.length || !stm.main ? `· ${stm.persona}'s · ` : "· ") +
    `${stm.turns_since_refresh} turn${stm.turns_since_refresh === 1 ? "" : "s"} since refresh` + (stm.private ? " · private" : "");
  keepOpen(box, () => box.replaceChildren(...stmRow(stm, state), ...others.flatMap((row) => [
    el("h3", { class: "persona-row" }, `${row.persona}'s · ${row.turns_since_refresh} turn${row.turns_since_refresh === 1 ? "" : "s"} since refresh`),
    ...stmRow(row, state)])));
}

// One persona's row: its summary or categories, when it was written, its raw lines.
function stmRow(stm, state) {
  return [
    stm.categories.length
      ? stm.categories.map((c) => el("div", { class: "block", "data-stm": c.slug }, el("strong", {}, c.label + ": "), c.text))
      : el("div", { class: "block", "data-stm": "summary" }, stm.summary || "(no summary yet)"),
    el("div", { class: "meta" }, `last updated ${stm.last_updated || "never"} · summary written ${stm.summary_updated_at || "never"}`),
    el("details", { "data-key": `stm-raw-${state.channel}-${stm.persona}` },
      el("summary", {}, `raw lines (${stm.raw.length})`),
      el("pre", {}, stm.raw.map((line) => `${line.ts.slice(11, 16)} ${line.speaker}: ${line.text}`).join("\n")))];
}

function renderLtm(memories) {
  $("ltm").replaceChildren(...(memories.length ? memories.map((memory) =>
    el("li", { class: memory.in_scope ? "in" : "out", title: memory.in_scope ? "a turn here may recall this" : "not recalled here" },
      el("div", {}, memory.content),
      el("div", { class: "meta" }, `#${memory.id} · ${memory.personas.join(" and ")}'s ${memory.scope} memory` +
        (memory.scope === "personal" ? ` of ${memory.owner}` : memory.about ? ` about ${memory.about}` : "") +
        ` · from ${memory.origin.channel || "?"}${memory.origin.private ? " (private)" : ""}` +
        (memory.status !== "active" ? ` · ${memory.status}` : "") +
        (memory.expires_at ? ` · until ${memory.expires_at.slice(0, 10)}` : "") +
        (memory.last_shown ? ` · last shown ${memory.last_shown.slice(0, 10)}` : "") +
        (memory.in_scope ? " · in scope here" : " · not in scope here")),
      memory.changes ? renderHistory(memory) : null))
    : [el("li", { class: "out" }, "No long-term memories yet.")]));
}

// "changed N times", and on click the texts it said before (never read by recall)
function renderHistory(memory) {
  return el("details", { class: "history" },
    el("summary", {}, `changed ${memory.changes} time${memory.changes === 1 ? "" : "s"}`),
    el("ol", {}, ...memory.history.map((version) =>
      el("li", {}, el("div", {}, version.content),
        el("div", { class: "meta" }, `from ${version.since} until ${version.until} · changed by ${version.changed_by}` +
          (version.expires_at ? ` · it was to expire ${version.expires_at.slice(0, 10)}` : ""))))));
}

function renderRounds(state) {
  const box = $("rounds");
  const message = state.messages.find((m) => m.id === view.selected);
  const turn = message && state.turns[message.turn];
  if (!turn) {
    $("request-meta").textContent = "";
    box.replaceChildren(el("p", { class: "empty" }, "Click a reply of kioku's to see what the model was sent."));
    return;
  }
  $("request-meta").textContent = `· turn ${turn.number}, ${turn.rounds.length} request${turn.rounds.length === 1 ? "" : "s"}` +
    (turn.persona ? ` · ${turn.persona}, lineage ${turn.lineage}` : "") + (turn.apologised ? " · apologised" : "");
  keepOpen(box, () => box.replaceChildren(...turn.rounds.map((round) => el("div", { class: "round", "data-round": round.number },
    el("h3", {}, `Request ${round.number} of ${turn.rounds.length} · ${round.messages.length} messages`),
    round.messages.map((msg) => {
      const key = `t${turn.number}-r${round.number}-m${msg.index}`;
      const node = el("div", { class: "msg " + kindClass(msg.kind), "data-kind": msg.kind, "data-key": key },
        el("div", { class: "head", title: "click to show it all", onclick: () => node.classList.toggle("expanded") },
          el("span", { class: "badge " + kindClass(msg.kind) }, msg.kind),
          msg.depth !== null ? el("span", { class: "depth" }, `depth ${msg.depth}`) : null,
          el("span", {}, `[${msg.index}] ${msg.role}${msg.name ? " · " + msg.name : ""}`)),
        el("pre", {}, [msg.text, ...msg.tool_calls].filter(Boolean).join("\n")));
      return node;
    }),
    round.tools_as_in
      ? el("div", { class: "meta" }, `Tools offered: ${round.tool_names.join(", ")}, as in request ${round.tools_as_in}`)
      : el("details", { class: "tools", "data-key": `t${turn.number}-r${round.number}-tools` },
        el("summary", {}, `Tools offered (${round.tools.length}): ${round.tool_names.join(", ") || "none"}`),
        round.tools.map((tool) => el("details", { class: "tool", "data-key": `t${turn.number}-r${round.number}-${tool.name}` },
          el("summary", {}, tool.name), el("pre", {}, tool.schema))))))));
}

document.addEventListener("DOMContentLoaded", () => {
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("text").value.trim();
    if (!text) return;
    $("text").value = "";
    if (text.startsWith("/") || text.startsWith(":")) act("/api/command", { line: text }, true);
    else act("/api/say", { text }, true);
  });
  $("member").addEventListener("change", () => { view.member = $("member").value; view.lastJson = ""; poll(); });
  $("wait-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act("/api/command", { line: ":wait " + $("wait-span").value.trim() });
  });
  $("janitor").addEventListener("click", () => act("/api/command", { line: ":janitor" }));
  $("make-private").addEventListener("click", () => act("/api/command", { line: ":private #" + view.channel }));
  $("make-public").addEventListener("click", () => act("/api/command", { line: ":public #" + view.channel }));
  poll();
  setInterval(poll, POLL_MS);
});
