// The duragent web console: fetches the JSON API and builds the page with DOM calls.
// Rule: text a user or a model wrote only ever enters the page as a text node
// (el() children, textContent); this file never assigns innerHTML or builds markup strings.
// Rule: a value that may be missing is shown as nothing, never as "null" or "undefined":
// children only enter the page through nodes() (el, fill, add), text through show() or line().
"use strict";

const TOKEN_KEY = "duragent.api_token";
const LONG_CHARS = 600;
const LONG_LINES = 12;
const BUDGET_LABELS = [
  ["window", "window (tokens)"], ["limit", "request limit"],
  ["request_tokens", "request tokens"], ["history_sent", "history messages sent"],
  ["history_omitted", "history trimmed"], ["results_shrunk", "results truncated"],
  ["results_masked", "results masked"], ["results_pruned", "results pruned"],
  ["groups_dropped", "groups dropped"], ["calls_repaired", "calls repaired"],
  ["orphans_dropped", "orphans dropped"],
];

const state = { sessionId: null, lastSeen: null, streaming: false, timer: null };
// An attachment's url → a promise of a blob: URL of its bytes, fetched once with the token
// (a hash names bytes that never change; a link or an <img> to the API would carry no token).
const blobs = new Map();

function missing(value) { return value === null || value === undefined || value === false; }

// A value as text: nothing when it is missing (the DOM would print "null" or "undefined").
function show(value) { return value === null || value === undefined ? "" : String(value); }

// Text from parts, a missing part adding nothing.
function line(...parts) { return parts.map(show).join(""); }

// Children as nodes: missing ones (a panel that is not there) left out, values as text nodes.
// replaceChildren()/append() would print a null child as the text "null".
function nodes(children) {
  return children.flat(Infinity).filter((child) => !missing(child))
    .map((child) => (child instanceof Node ? child : document.createTextNode(String(child))));
}

function fill(parent, ...children) { parent.replaceChildren(...nodes(children)); return parent; }

function add(parent, ...children) { parent.append(...nodes(children)); return parent; }

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (missing(value)) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  return add(node, children);
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

class Unauthorized extends Error {}

async function api(path, options) {
  const opts = Object.assign({ headers: {} }, options || {});
  opts.headers = Object.assign({ Accept: "application/json" }, opts.headers);
  if (token()) opts.headers.Authorization = "Bearer " + token();
  if (opts.json !== undefined) {
    opts.body = JSON.stringify(opts.json);
    opts.headers["Content-Type"] = "application/json";
    opts.method = opts.method || "POST";
  }
  opts.credentials = "omit";
  const response = await fetch(path, opts);
  if (response.status === 401) throw new Unauthorized("unauthorized");
  if (opts.raw) return response;
  const body = response.status === 204 ? null : await response.json().catch(() => null);
  if (!response.ok) {
    const detail = body && (body.detail || body.title);
    throw new Error(detail || ("HTTP " + response.status));
  }
  return body;
}

function showLogin(message) {
  fill(document.getElementById("view"));
  document.getElementById("login").hidden = false;
  document.getElementById("logout").hidden = true;
  document.getElementById("login-error").textContent = message || "";
  document.getElementById("token").focus();
}

function fail(error) {
  if (error instanceof Unauthorized) {
    showLogin(token() ? "The token was refused." : "");
    return;
  }
  const shown = document.getElementById("error");
  const text = show(error && (error.message || error)) || "failed";
  if (shown) shown.textContent = text;  // a failing poll says so once, not once a poll
  else document.getElementById("view").prepend(...nodes([el("p", { class: "error", role: "alert", id: "error" }, text)]));
}

function clip(text, code) {
  const value = show(text);
  const lines = value.split("\n").length;
  if (value.length <= LONG_CHARS && lines <= LONG_LINES) {
    return code ? el("pre", {}, value) : el("div", { class: "text" }, value);
  }
  const first = value.split("\n")[0].slice(0, 120);
  return el("details", { class: "long" },
    el("summary", {}, first + " … (" + value.length + " characters, " + lines + " lines)"),
    el("pre", {}, value));
}

function when(stamp) {
  if (!stamp) return "";
  const date = new Date(stamp);
  return isNaN(date) ? String(stamp) : date.toLocaleString();
}

function statusBadge(status) {
  return el("span", { class: "status " + show(status).replace(/[^a-z_]/g, "") }, status);
}

// What the overview's row and the session's page both say of a session, from the same fields
// (the server's front_end and chat, one function for both views): each marked data-field.
function facts(s) {
  return {
    agent: show(s.agent), status: statusBadge(s.status), front_end: show(s.front_end),
    chat: show(s.chat), updated: when(s.updated_at),
  };
}

// The session page's header line: the facts of its overview row, laid out as a sentence.
function factsLine(s) {
  const f = Object.fromEntries(Object.entries(facts(s)).map(([field, value]) =>
    [field, el(field === "agent" ? "b" : "span", { "data-field": field }, value)]));
  return el("div", { class: "row", id: "facts" }, f.agent, f.status,
    el("span", { class: "muted" }, f.front_end, s.chat ? " · " : null, f.chat),
    el("span", { class: "muted" }, "last activity ", f.updated),
    s.awaiting_reply ? el("span", { class: "status running", id: "replying" }, "replying…") : null);
}

// --- the overview: agents and sessions -------------------------------------------------

async function overview() {
  document.getElementById("where").textContent = "agents and sessions";
  const view = document.getElementById("view");
  const [agents, listing] = await Promise.all([api("/api/v1/agents"), api("/ui/api/sessions")]);
  const before = document.getElementById("new-agent");
  const pick = el("select", { id: "new-agent", "aria-label": "agent" },
    agents.agents.map((a) => el("option", { value: a.name }, a.name)));
  if (before && agents.agents.some((a) => a.name === before.value)) pick.value = before.value;
  const start = el("button", { class: "primary", type: "button", onclick: async () => {
    try {
      const made = await api("/api/v1/sessions", { json: { agent: pick.value } });
      location.assign("/ui/sessions/" + encodeURIComponent(made.session_id));
    } catch (error) { fail(error); }
  } }, "New session");
  const agentRows = agents.agents.map((a) => el("tr", {},
    el("td", {}, a.name), el("td", {}, a.description || ""), el("td", { class: "wide" }, a.version || "")));
  const sessionRows = listing.sessions.map((s) => el("tr", { "data-session": s.session_id },
    el("td", {}, el("a", { href: "/ui/sessions/" + encodeURIComponent(s.session_id) }, s.session_id)),
    Object.entries(facts(s)).map(([field, value]) =>
      el("td", { class: field === "chat" ? "wide" : null, "data-field": field }, value))));
  fill(view,
    el("h1", {}, "Agents"),
    el("table", { class: "table", id: "agents" },
      el("tr", {}, el("th", {}, "name"), el("th", {}, "description"), el("th", { class: "wide" }, "version")),
      agentRows),
    el("div", { class: "row card" }, pick, start),
    el("h2", {}, "Sessions"),
    el("table", { class: "table", id: "sessions" },
      el("tr", {}, el("th", {}, "session"), el("th", {}, "agent"), el("th", {}, "status"),
        el("th", {}, "front end"), el("th", { class: "wide" }, "chat"), el("th", {}, "last activity")),
      sessionRows));
  schedule(overview, 5000);
}

// --- one session ----------------------------------------------------------------------

function budgetBlock(message) {
  const budget = message.budget;
  if (!budget) return null;
  const said = line("budget: ", budget.request_tokens || 0, " / ", budget.limit || 0,
    " tokens (window ", budget.window || 0, ")");
  const rows = BUDGET_LABELS.filter(([key]) => key in budget)
    .map(([key, label]) => [el("dt", {}, label), el("dd", {}, show(budget[key]))]);
  if (message.usage) {
    for (const [key, value] of Object.entries(message.usage)) {
      rows.push([el("dt", {}, "usage " + key), el("dd", {}, show(value))]);
    }
  }
  return el("details", { class: "budget" }, el("summary", {}, said), el("dl", {}, rows.flat()));
}

// A call a newer message cancelled was recorded as skipped (its reason) and then "deny":
// the reason is what happened; nobody denied it.
function approvalLine(approval) {
  const outcome = approval.cancelled || line("approval: ", approval.decision || "pending");
  return line(outcome, approval.command ? " — " + approval.command : "");
}

function toolCall(call) {
  const args = show(JSON.stringify(call.arguments, null, 2));
  const approval = call.approval ? el("div", { class: "muted" }, approvalLine(call.approval)) : null;
  return el("div", { class: "call" },
    el("div", { class: "who" }, "tool call", el("b", {}, call.name || "?"), el("span", {}, call.call_id || "")),
    clip(args, true), approval);
}

function messageNode(m) {
  const head = el("div", { class: "who" }, el("b", {}, m.role), el("span", {}, line("#", m.seq)),
    el("span", {}, when(m.timestamp)), m.sender_name ? el("span", {}, m.sender_name) : null);
  if (m.role === "summary") {
    return el("div", { class: "msg summary", "data-seq": m.seq }, head,
      el("details", { class: "summary-marker" },
        el("summary", {}, line("Summary round ", m.round, ": ", m.messages,
          " earlier messages replaced (through #", m.through_seq, ")")),
        el("div", { class: "text" }, m.content)));
  }
  if (m.role === "tool") {
    add(head, el("span", { class: m.success ? "" : "error" }, m.success ? "ok" : "failed"),
      el("span", {}, m.call_id || ""));
  }
  const body = m.role === "tool" ? clip(m.content, true) : el("div", { class: "text" }, m.content);
  const calls = (m.tool_calls || []).map(toolCall);
  const said = m.content || (m.role !== "assistant" && !(m.attachments || []).length);
  return el("div", { class: "msg " + m.role, "data-seq": m.seq }, head,
    said ? body : null, attachmentList(m), calls, budgetBlock(m));
}

// --- attachments: listed under their message, images as thumbnails ------------------------
// A user's files and those the agent sent with a reply (send_file, with a caption) alike.

function byteSize(size) {
  const units = [["MB", 1048576], ["KB", 1024]];
  for (const [unit, scale] of units) if (size >= scale) return (size / scale).toFixed(1) + " " + unit;
  return line(size, " bytes");
}

function blobOf(url) {
  if (!blobs.has(url)) {
    const fetched = api(url, { raw: true, headers: { Accept: "*/*" } }).then(async (response) => {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return URL.createObjectURL(await response.blob());
    });
    fetched.catch(() => blobs.delete(url));  // the next view tries again
    blobs.set(url, fetched);
  }
  return blobs.get(url);
}

async function save(a) {
  try {
    const link = el("a", { href: await blobOf(a.url), download: a.name || a.kind, hidden: true });
    add(document.body, link);
    link.click();
    link.remove();
  } catch (error) { fail(error); }
}

function attachmentNode(a) {
  const label = a.name || a.kind;
  const preview = el("span", { class: "preview" });
  if (a.kind === "image") {
    const img = el("img", { class: "thumb", alt: label });
    fill(preview, img);
    blobOf(a.url).then((src) => { img.src = src; })
      .catch(() => fill(preview, el("span", { class: "muted" }, "(no preview)")));
  }
  const link = el("a", { href: a.url, class: "attachment-link", onclick: (event) => {
    event.preventDefault();
    save(a);
  } }, label);
  return el("div", { class: "attachment", "data-kind": a.kind, "data-sha256": a.sha256 },
    preview, link, el("span", { class: "muted" }, line(a.kind, " · ", byteSize(a.size), " · ", a.mime)),
    a.caption ? el("div", { class: "caption" }, a.caption) : null,  // a file the agent sent
    a.transcript ? el("div", { class: "muted" }, line("transcript: ", a.transcript)) : null);
}

function attachmentList(m) {
  const items = m.attachments || [];
  return items.length ? el("div", { class: "attachments" }, items.map(attachmentNode)) : null;
}

function approvalPanel(sessionId, pending) {
  const panel = el("div", { class: "card approval", id: "approval" },
    el("b", {}, "Approval needed"),
    el("div", { class: "muted" }, pending.tool_name || "tool", " — ", pending.call_id),
    el("pre", {}, pending.command || JSON.stringify(pending.arguments, null, 2)));
  const decide = (decision) => async () => {
    for (const b of panel.querySelectorAll("button")) b.disabled = true;
    try {
      await api("/api/v1/sessions/" + encodeURIComponent(sessionId) + "/approve",
        { json: { call_id: pending.call_id, decision } });
    } catch (error) { fail(error); }
    await session(sessionId);
  };
  add(panel, el("div", { class: "row" },
    el("button", { class: "primary", type: "button", onclick: decide("allow_once") }, "Allow once"),
    el("button", { type: "button", onclick: decide("allow_always") }, "Allow always"),
    el("button", { class: "danger", type: "button", onclick: decide("deny") }, "Deny")));
  return panel;
}

function memoryPanel(memory) {
  const pins = (memory && memory.pins) || [];
  if (!memory || (!memory.summary && !pins.length && !memory.task)) return null;
  const parts = [];
  if (memory.task) parts.push(el("div", {}, el("b", {}, "task: "), clip(memory.task)));
  for (const pin of pins) parts.push(el("div", {}, el("b", {}, line("pin (", pin.kind, "): ")), clip(pin.text)));
  if (memory.summary) {
    parts.push(el("details", { class: "summary-marker" },
      el("summary", {}, line("current summary (round ", memory.summary.round, ", through #", memory.summary.through_seq, ")")),
      el("div", { class: "text" }, memory.summary.content)));
  }
  return el("details", { class: "card", id: "memory" }, el("summary", {}, "What the model is told it knows"), parts);
}

function chatBox(sessionId) {
  const input = el("textarea", { id: "message", "aria-label": "message", placeholder: "Message" });
  const send = el("button", { class: "primary", type: "submit", id: "send" }, "Send");
  const form = el("form", { id: "chat", method: "post", action: "/ui", onsubmit: (event) => {
    event.preventDefault();
    const content = input.value;
    if (!content.trim() || state.streaming) return;
    input.value = "";
    streamTurn(sessionId, content).catch(fail);
  } }, input, el("div", { class: "row" }, send));
  return form;
}

async function session(sessionId) {
  state.sessionId = sessionId;
  document.getElementById("where").textContent = sessionId;
  const path = "/ui/api/sessions/" + encodeURIComponent(sessionId);
  const pinsPath = "/api/v1/sessions/" + encodeURIComponent(sessionId) + "/pins";
  const [data, memory] = await Promise.all([api(path), api(pinsPath).catch(() => null)]);
  const s = data.session;
  state.lastSeen = seenKey(s);
  const view = document.getElementById("view");
  const chat = document.getElementById("chat");
  const keep = chat && chat.querySelector("textarea").value;
  const history = el("div", { id: "history" }, data.messages.map(messageNode));
  const ended = s.status === "completed";
  fill(view,
    el("div", { class: "card" }, factsLine(s)),
    memoryPanel(memory),
    history,
    data.pending_approval ? approvalPanel(sessionId, data.pending_approval) : null,
    el("div", { id: "live" }),
    ended ? el("p", { class: "muted" }, "This session has ended; it takes no more messages.") : chatBox(sessionId));
  if (keep) document.getElementById("message").value = keep;
  schedule(() => refreshIfChanged(sessionId), busy(s) ? 1000 : 2000);
}

function seenKey(s) { return s.last_seq + ":" + s.status + ":" + s.awaiting_reply; }

function busy(s) { return s.status === "running" || s.awaiting_reply; }

async function refreshIfChanged(sessionId) {
  if (state.streaming) return schedule(() => refreshIfChanged(sessionId), 1000);
  const info = await api("/ui/api/sessions/" + encodeURIComponent(sessionId) + "?limit=1");
  if (seenKey(info.session) !== state.lastSeen) return session(sessionId);
  schedule(() => refreshIfChanged(sessionId), busy(info.session) ? 1000 : 2000);
}

// --- streaming a turn (POST …/stream, Server-Sent Events read from the fetch body) -------

async function streamTurn(sessionId, content) {
  state.streaming = true;
  const live = document.getElementById("live");
  const mine = el("div", { class: "msg user live" }, el("div", { class: "who" }, el("b", {}, "user")),
    el("div", { class: "text" }, content));
  const reply = el("div", { class: "text", id: "streamed" });
  const answer = el("div", { class: "msg assistant live" }, el("div", { class: "who" }, el("b", {}, "assistant"), "streaming…"), reply);
  fill(live, mine, answer);
  document.getElementById("send").disabled = true;
  try {
    const response = await api("/api/v1/sessions/" + encodeURIComponent(sessionId) + "/stream",
      { json: { content }, raw: true, headers: { Accept: "text/event-stream" } });
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      throw new Error((body && body.detail) || ("HTTP " + response.status));
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let event = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) onEvent(event, JSON.parse(data.join("\n")), reply, answer);
      }
    }
  } finally {
    state.streaming = false;
  }
  await session(sessionId);
}

function onEvent(event, data, reply, answer) {
  if (event === "token") reply.textContent += show(data.content);
  else if (event === "tool_call") {
    reply.textContent = "";
    add(answer, toolCall({ name: data.name, call_id: data.call_id, arguments: data.arguments }));
  } else if (event === "tool_result") {
    add(answer, el("div", { class: "msg tool" }, el("div", { class: "who" }, el("b", {}, "tool"),
      data.success ? "ok" : "failed"), clip(data.content, true)));
  } else if (event === "approval_required") {
    add(answer, el("div", { class: "muted" }, line("approval required: ", data.command)));
  } else if (event === "error") {
    add(answer, el("p", { class: "error" }, data.message));
  } else if (event === "summary") {
    add(answer, el("div", { class: "muted" }, line("summary round ", data.round, " written")));
  }
}

// --- start --------------------------------------------------------------------------------

function schedule(fn, ms) {
  clearTimeout(state.timer);
  state.timer = setTimeout(() => { fn().catch(fail); }, ms);
}

async function route() {
  document.getElementById("login").hidden = true;
  document.getElementById("logout").hidden = !token();
  const match = location.pathname.match(/^\/ui\/sessions\/([^/]+)$/);
  try {
    if (match) await session(decodeURIComponent(match[1]));
    else await overview();
  } catch (error) { fail(error); }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const field = document.getElementById("token");
    sessionStorage.setItem(TOKEN_KEY, field.value);
    field.value = "";
    route();
  });
  document.getElementById("logout").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    clearTimeout(state.timer);
    showLogin("");
  });
  route();
});
