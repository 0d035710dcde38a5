// parkgate console: open asks (with operator cancel) and a demo chat. No build step.
// Every value from the API is shown with textContent, never as HTML, and through
// visibleText/visibleId: control, direction and invisible characters show as their
// escapes (\u202e), so values that differ never look the same.
"use strict";

(function () {
  const TOKEN_KEY = "parkgate.token";
  const REFRESH_MS = 3000;
  const PAGE_ASKS = 100;
  const phrases = JSON.parse(document.getElementById("phrases").textContent || "{}");
  const $ = (id) => document.getElementById(id);

  // The characters shown escaped: one list, parkgate.core.display.HIDDEN_RANGES, sent in the page.
  const hex = (n, width) => n.toString(16).padStart(width, "0");
  const hidden = new RegExp(
    "[" + (phrases.hidden || []).map(([a, b]) => "\\u{" + hex(a, 4) + "}-\\u{" + hex(b, 4) + "}").join("") + "]",
    "u"
  );
  function escaped(ch) {
    const point = ch.codePointAt(0);
    return point <= 0xffff ? "\\u" + hex(point, 4) : "\\U" + hex(point, 8);
  }
  // Prose (prompts, labels, replies): hidden characters escaped, line breaks and tabs kept.
  function visibleText(value) {
    let out = "";
    for (const ch of String(value === null || value === undefined ? "" : value)) {
      out += hidden.test(ch) && ch !== "\n" && ch !== "\t" ? escaped(ch) : ch;
    }
    return out;
  }
  // Ids: also backslashes and compatibility characters (fullwidth letters) escaped.
  function visibleId(value) {
    let out = "";
    for (const ch of String(value === null || value === undefined ? "" : value)) {
      out += ch === "\\" || hidden.test(ch) || ch.normalize("NFKC") !== ch ? escaped(ch) : ch;
    }
    return out;
  }

  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  function setStatus(text, isError) {
    const line = $("status");
    line.textContent = text || "";
    line.className = isError ? "error" : "";
  }

  // An API refusal: its message for the status line, and the status and body it came with.
  function refusal(message, status, data) {
    const error = new Error(message);
    error.status = status;
    error.data = data;
    return error;
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    if (token()) headers.Authorization = "Bearer " + token();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (error) {
      throw new Error("the server did not answer (" + error.message + ")");
    }
    let data = null;
    try {
      data = await response.json();
    } catch (error) {
      data = null;
    }
    if (!response.ok) {
      const status = response.status;
      if (status === 401 && !token()) throw refusal("this server needs a token: paste it in the API token field", status, data);
      if (status === 401) {
        throw refusal("the server does not know this token: check it in the API token field, or paste a current one", status, data);
      }
      if (status === 429) throw refusal("429: " + visibleText((data && data.detail) || "too many requests"), status, data);
      const detail = data && data.detail ? data.detail : response.statusText;
      throw refusal(visibleText(status + " " + ((data && data.error) || "error") + ": " + detail), status, data);
    }
    return data;
  }

  // -- people: display names from GET /v1/directory in place of sender ids ----------
  // The server's directory (PARKGATE_DIRECTORY, and the names its channels learnt); an
  // id with no name there is shown as itself.
  const directory = { names: {}, shown: "" };

  async function refreshDirectory() {
    let data;
    try {
      data = await api("GET", "/v1/directory");
    } catch (error) {
      return; // a token without the read scope, say: ids are shown
    }
    const shown = JSON.stringify(data.names || {});
    if (shown === directory.shown) return;
    directory.names = data.names || {};
    directory.shown = shown;
    paging.shown = ""; // the rows name people: shown again with the names
    refreshAsks();
  }

  function nameOf(sender) {
    return Object.prototype.hasOwnProperty.call(directory.names, sender) ? directory.names[sender] : null;
  }

  // A person as a line names them in text: their display name, else their id.
  function personText(sender) {
    const name = nameOf(sender);
    return name === null ? visibleId(sender) : visibleText(name);
  }

  // A person as an element: their display name with their id in its tooltip, else their id.
  function person(sender) {
    const span = document.createElement("span");
    span.className = "person";
    const name = nameOf(sender);
    span.textContent = name === null ? visibleId(sender) : visibleText(name);
    if (name !== null) span.title = visibleId(sender);
    return span;
  }

  // People as a line lists them: each a person(), separated by ``separator``.
  function peopleNodes(senders, separator) {
    const nodes = [];
    senders.forEach((sender, i) => {
      if (i > 0) nodes.push(document.createTextNode(separator));
      nodes.push(person(sender));
    });
    return nodes;
  }

  function cell(row, text, className, label) {
    const td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "" : String(text);
    if (className) td.className = className;
    if (label) td.dataset.label = label;
    row.appendChild(td);
    return td;
  }

  // -- open asks: a page at a time (the API's limit and cursor) --------------------
  const paging = { cursor: null, before: [], next: null, shown: "", busy: false };

  async function refreshAsks() {
    if (paging.busy) return; // a slow answer is not asked for again on top of itself
    paging.busy = true;
    try {
      await showPage();
    } finally {
      paging.busy = false;
    }
  }

  async function showPage() {
    let data;
    const query = "/v1/asks?status=open&limit=" + PAGE_ASKS + (paging.cursor ? "&cursor=" + encodeURIComponent(paging.cursor) : "");
    try {
      data = await api("GET", query);
    } catch (error) {
      setStatus(error.message, true);
      return;
    }
    paging.next = data.next || null;
    $("asks-next").hidden = !paging.next;
    $("asks-first").hidden = paging.before.length === 0;
    const page = paging.before.length + 1;
    const many = page > 1 || paging.next;
    $("asks-count").textContent = many ? "(page " + page + ": " + data.asks.length + ")" : "(" + data.asks.length + ")";
    $("asks-empty").hidden = data.asks.length > 0 || page > 1;
    $("asks").hidden = data.asks.length === 0;
    if ($("status").className === "error") setStatus("");
    const shown = JSON.stringify(
      data.asks.map((ask) => [ask.ask_id, ask.mismatches, ask.hours_open, ask.votes, ask.reminders_sent, ask.next_due_at, posts(ask)]),
    );
    if (shown === paging.shown) return; // nothing changed: the rows (and focus) stay as they are
    paging.shown = shown;
    const body = $("asks-body");
    body.replaceChildren(...data.asks.map(askRow));
  }

  function askRow(ask) {
    const row = document.createElement("tr");
    row.dataset.askId = ask.ask_id;
    row.className = "ask-row";
    cell(row, visibleId(ask.conversation_id), "conversation", "Conversation");
    cell(row, ask.phase ? visibleId(ask.phase) : "—", "phase", "Phase");
    const question = cell(row, "", "prompt", "Question");
    const prompt = document.createElement("div");
    prompt.className = "prompt-text";
    prompt.textContent = visibleText(ask.prompt);
    question.appendChild(prompt);
    if (ask.kind === "choice") {
      const options = document.createElement("div");
      options.className = "options";
      ask.options.forEach((label, i) => {
        const option = document.createElement("span");
        option.className = "option";
        option.textContent = i + 1 + ". " + visibleText(label);
        options.appendChild(option);
      });
      question.appendChild(options);
    } else {
      const kind = document.createElement("div");
      kind.className = "options";
      kind.textContent = "free text";
      question.appendChild(kind);
    }
    if (ask.responders && ask.responders.length > 0) question.append(...whoLines(ask));
    if (ask.context && Object.keys(ask.context).length > 0) {
      const context = document.createElement("div");
      context.className = "context";
      context.textContent = visibleText(JSON.stringify(ask.context));
      question.appendChild(context);
    }
    posts(ask).forEach(([name, where]) => {
      const line = document.createElement("div");
      line.className = "posted";
      line.textContent = "Posted on " + visibleId(name) + ": " + visibleText(JSON.stringify(where));
      question.appendChild(line);
    });
    const schedule = scheduleLine(ask);
    if (schedule) {
      const line = document.createElement("div");
      line.className = "schedule";
      line.textContent = schedule;
      question.appendChild(line);
    }
    cell(row, ask.mismatches, "num mismatches" + (ask.mismatches >= 3 ? " hot" : ""), "Mismatches");
    cell(row, Number(ask.hours_open).toFixed(2), "num hours", "Hours open");
    cell(row, new Date(ask.asked_at).toLocaleString(), "asked-at", "Asked at");
    const actions = cell(row, "", "actions");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "cancel";
    button.textContent = "Cancel";
    button.setAttribute("aria-label", "Cancel the ask in " + visibleId(ask.conversation_id));
    button.addEventListener("click", () => cancelAsk(ask, button));
    actions.appendChild(button);
    return row;
  }

  // Who may answer an ask, how many must agree, and each responder's current vote:
  // people by their display names (their ids in the tooltips) where the directory has them.
  function whoLines(ask) {
    const responders = document.createElement("div");
    responders.className = "options responders";
    responders.append("For ", ...peopleNodes(ask.responders, ", "));
    if (ask.quorum > 1) responders.append(" · " + ask.quorum + " of " + ask.responders.length + " must agree");
    const votes = document.createElement("div");
    votes.className = "options votes";
    const cast = ask.votes || [];
    votes.append("Votes: ");
    if (!cast.length) votes.append("none yet");
    cast.forEach((vote, i) => {
      if (i > 0) votes.append("; ");
      votes.append(person(vote.sender), ": " + vote.option_index + ". " + visibleText(vote.answer));
    });
    return ask.quorum > 1 || cast.length ? [responders, votes] : [responders];
  }

  // Who closed an ask, as the server keeps it: "answered by Alice Ng" (U_ALICE where the
  // directory has no name), "closed by operator".
  function closedByNote(ask) {
    if (ask.answered_by) return "answered by " + personText(ask.answered_by);
    if (ask.closed_by) return "closed by " + personText(ask.closed_by);
    return "";
  }

  // Where an ask is posted: [channel, location] for each registered channel (the server's
  // registry, sent in the page) whose key its JSON holds.
  function posts(ask) {
    return (phrases.channels || []).filter((name) => ask[name]).map((name) => [name, ask[name]]);
  }

  // An ask with reminders or an escalation: how many reminders went, and when the next is due.
  function scheduleLine(ask) {
    const reminders = (ask.remind_after || []).length;
    if (!reminders && ask.escalate_after == null) return "";
    const parts = [];
    if (reminders) parts.push(ask.reminders_sent + " of " + reminders + (reminders === 1 ? " reminder" : " reminders") + " sent");
    if (ask.escalated_at) parts.push("escalated " + new Date(ask.escalated_at).toLocaleTimeString());
    parts.push(ask.next_due_at ? "next due " + new Date(ask.next_due_at).toLocaleTimeString() : "nothing more due");
    return parts.join(" · ");
  }

  function nextPage() {
    if (!paging.next) return;
    paging.before.push(paging.cursor);
    paging.cursor = paging.next;
    paging.shown = "";
    refreshAsks();
  }

  function firstPage() {
    paging.before = [];
    paging.cursor = null;
    paging.shown = "";
    refreshAsks();
  }

  async function cancelAsk(ask, button) {
    // The agent waiting on the ask is told "cancelled": one stray click must not do that.
    const question = visibleText(ask.prompt).split("\n")[0].slice(0, 120);
    if (!window.confirm("Cancel the open ask in " + visibleId(ask.conversation_id) + "?\n\n" + question +
        "\n\nWhatever waits on it is told it was cancelled.")) return;
    button.disabled = true;
    try {
      const closed = await api("POST", "/v1/asks/" + encodeURIComponent(ask.ask_id) + "/cancel");
      setStatus("Ask in " + visibleId(ask.conversation_id) + " is now " + closed.status + ".");
      if (ask.conversation_id === conversation()) {
        // The chat below shows this conversation: it says its question is gone, and why.
        chat.parked[ask.conversation_id] = false;
        logLine("gate", "cancelled", phrases.operator_cancelled || "", "not parked · by an operator");
      }
    } catch (error) {
      setStatus(error.message, true);
      button.disabled = false;
    }
    await refreshAsks();
  }

  // -- failed callbacks: shown only when there are some ------------------------------
  async function refreshFailed() {
    let data;
    try {
      data = await api("GET", "/v1/callbacks/failed?limit=" + PAGE_ASKS);
    } catch (error) {
      return; // a token without the read scope, say: the asks list says why
    }
    $("failed-panel").hidden = data.asks.length === 0;
    $("failed-count").textContent = "(" + data.asks.length + ")";
    $("failed-list").replaceChildren(...data.asks.map(failedItem));
  }

  // "1 attempt", "3 attempts".
  function attemptsText(count) {
    return count + (count === 1 ? " attempt" : " attempts");
  }

  function failedItem(ask) {
    const item = document.createElement("li");
    item.className = "failed-callback";
    item.dataset.askId = ask.ask_id;
    const what = document.createElement("div");
    what.className = "failed-what";
    what.textContent =
      visibleId(ask.conversation_id) + ": " + ask.status + " — " + attemptsText(ask.callback.attempts) + ", last: " +
      visibleText(ask.callback.last_error || "") + (closedByNote(ask) ? " · " + closedByNote(ask) : "");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "retry";
    button.textContent = "Retry";
    button.setAttribute("aria-label", "Retry the callback of the ask in " + visibleId(ask.conversation_id));
    button.addEventListener("click", () => retryCallback(ask, button));
    item.append(what, button);
    return item;
  }

  async function retryCallback(ask, button) {
    button.disabled = true;
    try {
      await api("POST", "/v1/asks/" + encodeURIComponent(ask.ask_id) + "/callback/retry");
      setStatus("The callback of the ask in " + visibleId(ask.conversation_id) + " is due again.");
    } catch (error) {
      setStatus(error.message, true);
      button.disabled = false;
    }
    await refreshFailed();
  }

  // -- demo chat -------------------------------------------------------------------
  // Whether each conversation's last reply left a question parked there (unknown: no).
  const chat = { parked: {} };
  // A PlantUML block in a reply, shown as code.
  const DIAGRAM = /(@startuml[\s\S]*?@enduml)/;

  function logLine(who, kind, text, extra) {
    const item = document.createElement("li");
    item.className = "msg " + who;
    const head = document.createElement("div");
    head.className = "who";
    head.textContent = who === "you" ? "you" : "parkgate";
    if (kind) {
      const badge = document.createElement("span");
      badge.className = "kind kind-" + kind;
      badge.textContent = kind;
      head.appendChild(badge);
    }
    if (extra) {
      const note = document.createElement("span");
      note.className = "note";
      note.textContent = extra;
      head.appendChild(note);
    }
    const body = document.createElement("div");
    body.className = "text";
    const parts = visibleText(text).split(DIAGRAM);
    parts.forEach((part, i) => {
      if (i % 2 === 0) {
        // The blank lines around a diagram are its block's margins.
        let prose = i > 0 ? part.replace(/^\n+/, "") : part;
        if (i < parts.length - 1) prose = prose.replace(/\n+$/, "");
        if (prose) body.appendChild(document.createTextNode(prose));
        return;
      }
      const code = document.createElement("pre");
      code.className = "code";
      code.textContent = part;
      body.appendChild(code);
    });
    item.append(head, body);
    $("chat-log").appendChild(item);
    item.scrollIntoView({ block: "nearest" });
  }

  async function expiredNotice(askId) {
    try {
      const ask = await api("GET", "/v1/asks/" + encodeURIComponent(askId));
      const idle = (new Date(ask.answered_at) - new Date(ask.last_touched)) / 3600000;
      return (phrases.expired || "").replace("{hours}", idle.toFixed(1));
    } catch (error) {
      return "";
    }
  }

  // The replies that close their ask: the chat notes who the server says closed it.
  const CLOSING = ["selected", "answered", "cancelled"];

  async function closedBy(askId) {
    try {
      return closedByNote(await api("GET", "/v1/asks/" + encodeURIComponent(askId)));
    } catch (error) {
      return "";
    }
  }

  async function showReply(reply, said) {
    let text = reply.text;
    if (reply.kind === "pass") {
      text = (phrases.stand_in || "{text}").replace("{text}", said || "");
      if (reply.expired_ask_id) {
        const notice = await expiredNotice(reply.expired_ask_id);
        if (notice) text = notice + "\n" + text;
      }
    }
    chat.parked[conversation()] = reply.parked;
    const notes = [reply.parked ? "parked" : "not parked"];
    if (reply.next_ask) notes.push("next: " + reply.next_ask.kind);
    if (CLOSING.includes(reply.kind) && reply.ask_id) {
      const by = await closedBy(reply.ask_id);
      if (by) notes.push(by);
    }
    logLine("gate", reply.kind, text, notes.join(" · "));
  }

  function conversation() {
    return $("chat-conversation").value.trim();
  }

  async function startDemo(event) {
    event.preventDefault();
    if (!conversation()) return;
    try {
      // Never replaces: an open question is answered or dropped first, as the person chooses.
      const reply = await api("POST", "/v1/workflows/uml/start", { conversation_id: conversation() });
      logLine("you", "", "(started the UML demo in " + visibleId(conversation()) + ")");
      await showReply(reply);
    } catch (error) {
      if (error.status !== 409) {
        setStatus(error.message, true);
        return;
      }
      chat.parked[conversation()] = true;
      logLine("gate", "", phrases.still_parked || error.message, "parked");
    }
    $("chat-text").focus();
    await refreshAsks();
  }

  async function send(event) {
    event.preventDefault();
    const input = $("chat-text");
    const text = input.value;
    if (!conversation()) return;
    if (!text.trim() && !chat.parked[conversation()]) {
      // A blank message with nothing parked would only reach the stand-in model.
      setStatus("Type a message to send.");
      input.focus();
      return;
    }
    input.value = "";
    // Who is typing, sent with each message: on an ask with responders only theirs count.
    const sender = $("chat-sender").value.trim();
    logLine("you", "", text, sender ? "as " + personText(sender) : "");
    try {
      const path = "/v1/conversations/" + encodeURIComponent(conversation()) + "/messages";
      await showReply(await api("POST", path, sender ? { text, sender } : { text }), text);
    } catch (error) {
      setStatus(error.message, true);
    }
    await refreshAsks();
  }

  // -- wiring ----------------------------------------------------------------------
  function init() {
    $("token").value = token();
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
      setStatus("Token set for this tab.");
      refreshDirectory();
      refreshAsks();
      refreshFailed();
    });
    $("refresh").addEventListener("click", () => {
      refreshDirectory();
      refreshAsks();
      refreshFailed();
    });
    $("asks-next").addEventListener("click", nextPage);
    $("asks-first").addEventListener("click", firstPage);
    $("chat-start").addEventListener("submit", startDemo);
    $("chat-send").addEventListener("submit", send);
    $("chat-conversation").value = "demo-" + Math.random().toString(36).slice(2, 8);
    refreshDirectory();
    refreshAsks();
    refreshFailed();
    setInterval(refreshAsks, REFRESH_MS);
    setInterval(refreshDirectory, REFRESH_MS * 5);
    setInterval(refreshFailed, REFRESH_MS * 5);
  }

  init();
})();
