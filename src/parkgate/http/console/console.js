// parkgate console: open asks (cancel one or many), history with filters and paging, an
// ask's page with its timeline, charts of the figures, live updates from the event stream,
// and a demo chat. No build step. Views are addressed by the URL's hash (#/open,
// #/history?status=expired, #/ask/<id>, #/charts), so Back, Forward and bookmarks work.
// Every value from the API is shown with textContent, never as HTML, and through
// visibleText/visibleId: control, direction and invisible characters show as their
// escapes (\u202e), so values that differ never look the same.
"use strict";

(function () {
  const TOKEN_KEY = "parkgate.token";
  const REFRESH_MS = 3000;
  // With the event stream connected, the open list follows its events; this slow poll only
  // keeps the ages ("hours open") current.
  const LIVE_REFRESH_MS = 30000;
  const PAGE_ASKS = 100;
  const PAGE_HISTORY = 50;
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
    if (view.name === "open") refreshAsks();
    else route();
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
    // A selected ask that left the page (closed, or paged away) is no longer selected.
    const onPage = new Set(data.asks.map((ask) => ask.ask_id));
    for (const id of [...selection.keys()]) if (!onPage.has(id)) selection.delete(id);
    const body = $("asks-body");
    const focused = document.activeElement && document.activeElement.closest ? document.activeElement.closest("tr.ask-row") : null;
    const focusedClass = focused && document.activeElement.className;
    const focusedId = focused ? focused.dataset.askId : null;
    body.replaceChildren(...data.asks.map(askRow));
    if (focusedId) {
      // A row redrawn under the keyboard keeps its focus: the same control of the same ask.
      const again = [...body.querySelectorAll("tr.ask-row")].find((row) => row.dataset.askId === focusedId);
      const control = again && (again.querySelector("." + (focusedClass || "x").split(" ")[0]) || again.querySelector("a"));
      if (control) control.focus();
    }
    showSelection();
  }

  function askRow(ask) {
    const row = document.createElement("tr");
    row.dataset.askId = ask.ask_id;
    row.className = "ask-row";
    const pick = cell(row, "", "select", "Select");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "pick";
    box.checked = selection.has(ask.ask_id);
    box.setAttribute("aria-label", "Select the ask in " + visibleId(ask.conversation_id));
    box.addEventListener("change", () => {
      if (box.checked) selection.set(ask.ask_id, ask);
      else selection.delete(ask.ask_id);
      showSelection();
    });
    pick.appendChild(box);
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
    const controls = document.createElement("div");
    controls.className = "row-actions";
    controls.append(askLink(ask, "Timeline"), button);
    actions.appendChild(controls);
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

  // The agent waiting on an ask is told "cancelled": one stray click must not do that, so
  // a single cancel asks first, naming the conversation and the question.
  function confirmedCancel(ask) {
    const question = visibleText(ask.prompt).split("\n")[0].slice(0, 120);
    return window.confirm("Cancel the open ask in " + visibleId(ask.conversation_id) + "?\n\n" + question +
        "\n\nWhatever waits on it is told it was cancelled.");
  }

  async function cancelAsk(ask, button) {
    if (!confirmedCancel(ask)) return;
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

  // -- shared helpers for the operator's views -----------------------------------------
  // A moment as the operator's locale writes it ("" for none).
  function when(iso, seconds) {
    if (!iso) return "";
    const moment = new Date(iso);
    if (Number.isNaN(moment.getTime())) return visibleText(iso);
    return seconds ? moment.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" }) : moment.toLocaleString();
  }

  // Seconds as a person reads them: "42 s", "3.5 min", "2.1 h", "1.5 d".
  function duration(seconds) {
    if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "—";
    if (seconds < 1) return "<1 s";
    if (seconds < 90) return Math.round(seconds) + " s";
    if (seconds < 5400) return (seconds / 60).toFixed(1) + " min";
    if (seconds < 172800) return (seconds / 3600).toFixed(1) + " h";
    return (seconds / 86400).toFixed(1) + " d";
  }

  // The time an ask took to be answered, in seconds (null unless it was answered).
  function answerSeconds(ask) {
    if (ask.status !== "answered" || !ask.answered_at) return null;
    return (new Date(ask.answered_at) - new Date(ask.asked_at)) / 1000;
  }

  function askHref(askId) {
    return "#/ask/" + encodeURIComponent(askId);
  }

  // A link to the ask's page (its timeline), reading `text`.
  function askLink(ask, text) {
    const link = document.createElement("a");
    link.className = "ask-link";
    link.href = askHref(ask.ask_id);
    link.textContent = text;
    link.setAttribute("aria-label", "Timeline of the ask in " + visibleId(ask.conversation_id));
    return link;
  }

  // A cell whose text (the conversation) links to the ask's page.
  function askLinkCell(row, ask, className, label) {
    const td = cell(row, "", className, label);
    td.appendChild(askLink(ask, visibleId(ask.conversation_id)));
    return td;
  }

  function badge(text, kind) {
    const span = document.createElement("span");
    span.className = "kind kind-" + String(kind || text).replace(/[^a-z_]/g, "");
    span.textContent = visibleId(text);
    return span;
  }

  // A datetime-local input's value as an ISO moment with its zone ("" when blank), and back.
  function isoOf(local) {
    if (!local) return "";
    const moment = new Date(local);
    return Number.isNaN(moment.getTime()) ? "" : moment.toISOString();
  }
  function localOf(iso) {
    const moment = new Date(iso);
    if (!iso || Number.isNaN(moment.getTime())) return "";
    const pad = (n) => String(n).padStart(2, "0");
    return moment.getFullYear() + "-" + pad(moment.getMonth() + 1) + "-" + pad(moment.getDate()) + "T" +
      pad(moment.getHours()) + ":" + pad(moment.getMinutes());
  }

  // -- views: the hash says which one shows -------------------------------------------
  const VIEWS = ["open", "history", "ask", "charts"];
  const view = { name: "open", askId: null, params: new URLSearchParams() };

  function parseHash() {
    const [path, query] = (location.hash.slice(1) || "/open").split("?");
    const parts = path.split("/").filter(Boolean);
    const name = VIEWS.includes(parts[0]) ? parts[0] : "open";
    return { name, askId: name === "ask" ? decodeURIComponent(parts.slice(1).join("/")) : null, params: new URLSearchParams(query || "") };
  }

  function route() {
    const next = parseHash();
    const changed = next.name !== view.name || next.askId !== view.askId;
    Object.assign(view, next);
    for (const name of VIEWS) $("view-" + name).hidden = name !== view.name;
    document.querySelectorAll("nav a[data-view]").forEach((link) => {
      if (link.dataset.view === (view.name === "ask" ? "" : view.name)) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    });
    if (view.name === "open") {
      document.title = "parkgate console";
      refreshAsks();
    } else if (view.name === "history") {
      document.title = "History · parkgate console";
      showHistoryFilters();
      listing.cursor = null;
      listing.before = [];
      loadHistory();
    } else if (view.name === "ask") {
      document.title = "Ask · parkgate console";
      loadAsk();
    } else {
      document.title = "Charts · parkgate console";
      loadCharts();
    }
    // The keyboard follows the view: its heading takes the focus (not on the first load).
    if (changed && routed) $(view.name === "open" ? "asks-title" : view.name + "-title").focus();
    routed = true;
  }
  let routed = false;

  // Go to `hash`; when the address is that already, show the view again (a repeated search).
  function go(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  }

  // -- bulk cancel: the selected open asks, after a confirmation -----------------------
  const selection = new Map();

  function showSelection() {
    const button = $("cancel-selected");
    button.disabled = selection.size === 0;
    button.textContent = selection.size ? "Cancel selected (" + selection.size + ")" : "Cancel selected";
    const boxes = [...document.querySelectorAll("#asks-body input.pick")];
    const all = $("select-all");
    all.checked = boxes.length > 0 && boxes.every((box) => box.checked);
    all.indeterminate = !all.checked && boxes.some((box) => box.checked);
  }

  function selectAll() {
    const on = $("select-all").checked;
    document.querySelectorAll("#asks-body tr.ask-row").forEach((row) => {
      const box = row.querySelector("input.pick");
      box.checked = on;
      box.dispatchEvent(new Event("change"));
    });
    showSelection();
  }

  function confirmCancel() {
    const asks = [...selection.values()];
    if (!asks.length) return;
    $("confirm-title").textContent = asks.length === 1 ? "Cancel this ask?" : "Cancel these " + asks.length + " asks?";
    $("confirm-list").replaceChildren(
      ...asks.map((ask) => {
        const item = document.createElement("li");
        const strong = document.createElement("strong");
        strong.textContent = visibleId(ask.conversation_id);
        item.append(strong, document.createTextNode(": " + visibleText(ask.prompt).split("\n")[0].slice(0, 120)));
        return item;
      }),
    );
    $("confirm-cancel").textContent = asks.length === 1 ? "Cancel 1 ask" : "Cancel " + asks.length + " asks";
    const dialog = $("confirm");
    dialog.returnValue = "";
    dialog.showModal();
    $("confirm-keep").focus(); // the safe choice has the focus: Enter keeps them open
  }

  async function cancelSelected() {
    if ($("confirm").returnValue !== "cancel") {
      setStatus("Nothing was cancelled.");
      return;
    }
    const asks = [...selection.values()];
    const button = $("cancel-selected");
    button.disabled = true;
    let done = 0;
    const refused = [];
    for (const ask of asks) {
      try {
        await api("POST", "/v1/asks/" + encodeURIComponent(ask.ask_id) + "/cancel");
        done += 1;
        selection.delete(ask.ask_id);
      } catch (error) {
        refused.push(visibleId(ask.conversation_id) + " (" + error.message + ")");
      }
    }
    const said = "Cancelled " + done + (done === 1 ? " ask" : " asks") + ".";
    setStatus(refused.length ? said + " Not cancelled: " + refused.join("; ") : said, refused.length > 0);
    paging.shown = "";
    await refreshAsks();
    showSelection();
  }

  // -- history: closed (and open) asks, filtered, a page at a time -----------------------
  const listing = { cursor: null, before: [], next: null, busy: false };
  const HISTORY_FIELDS = ["status", "since", "until", "conversation_id", "responder", "channel", "outcome", "q"];

  // The form's filters as the API's query (blank fields left out; moments with their zone).
  function historyQuery() {
    const form = $("history-filters");
    const query = new URLSearchParams();
    for (const name of HISTORY_FIELDS) {
      const raw = form.elements[name].value.trim();
      const value = name === "since" || name === "until" ? isoOf(raw) : raw;
      if (value) query.set(name, value);
    }
    return query;
  }

  // The address's filters shown in the form (a bookmark or Back shows what it lists).
  function showHistoryFilters() {
    const form = $("history-filters");
    for (const name of HISTORY_FIELDS) {
      const value = view.params.get(name) || "";
      form.elements[name].value = name === "since" || name === "until" ? localOf(value) : name === "status" ? value || "closed" : value;
    }
  }

  async function loadHistory() {
    if (listing.busy) return;
    listing.busy = true;
    const query = new URLSearchParams(view.params);
    if (!query.get("status")) query.set("status", "closed");
    if (!/^\d+$/.test(query.get("limit") || "")) query.set("limit", String(PAGE_HISTORY)); // a bookmark may set it
    if (listing.cursor) query.set("cursor", listing.cursor);
    let data;
    try {
      data = await api("GET", "/v1/asks?" + query.toString());
    } catch (error) {
      setStatus(error.message, true);
      return;
    } finally {
      listing.busy = false;
    }
    if ($("status").className === "error") setStatus("");
    listing.next = data.next || null;
    const page = listing.before.length + 1;
    $("history-next").disabled = !listing.next;
    $("history-previous").disabled = page === 1;
    $("history-page").textContent = "Page " + page;
    $("history-count").textContent = "(" + data.asks.length + (listing.next || page > 1 ? " on this page)" : ")");
    $("history-empty").hidden = data.asks.length > 0;
    $("history").hidden = data.asks.length === 0;
    $("history-body").replaceChildren(...data.asks.map(historyRow));
  }

  function historyRow(ask) {
    const row = document.createElement("tr");
    row.className = "history-row";
    row.dataset.askId = ask.ask_id;
    row.dataset.status = ask.status;
    askLinkCell(row, ask, "conversation", "Conversation");
    cell(row, "", "status", "Status").appendChild(badge(ask.status));
    const question = cell(row, "", "prompt", "Question");
    const prompt = document.createElement("div");
    prompt.className = "prompt-text";
    prompt.textContent = visibleText(ask.prompt);
    question.appendChild(prompt);
    const outcome = [ask.answer !== null && ask.answer !== undefined ? visibleText(ask.answer) : ask.outcome ? visibleId(ask.outcome) : ""];
    if (closedByNote(ask)) outcome.push(closedByNote(ask));
    cell(row, outcome.filter(Boolean).join(" · ") || "—", "outcome", "Outcome");
    cell(row, when(ask.asked_at), "asked-at", "Asked at");
    cell(row, when(ask.closed_at || ask.answered_at) || "—", "asked-at closed-at", "Closed at");
    cell(row, ask.status === "answered" ? duration(answerSeconds(ask)) : "—", "num took", "Time to answer");
    return row;
  }

  function historyPage(step) {
    if (step > 0) {
      if (!listing.next) return;
      listing.before.push(listing.cursor);
      listing.cursor = listing.next;
    } else {
      if (!listing.before.length) return;
      listing.cursor = listing.before.pop();
    }
    loadHistory();
  }

  // -- an ask's page: what it is, and its timeline ---------------------------------------
  const timeline = { seq: 0, ask: null, busy: false };

  async function loadAsk() {
    const askId = view.askId;
    let ask, events;
    try {
      [ask, events] = await Promise.all([
        api("GET", "/v1/asks/" + encodeURIComponent(askId)),
        api("GET", "/v1/asks/" + encodeURIComponent(askId) + "/events"),
      ]);
    } catch (error) {
      $("ask-title").textContent = "Ask " + visibleId(askId);
      $("ask-facts").replaceChildren();
      $("timeline").replaceChildren();
      $("ask-cancel").hidden = true;
      setStatus(error.message, true);
      return;
    }
    if (view.askId !== askId) return; // the operator moved on meanwhile
    if ($("status").className === "error") setStatus("");
    showAsk(ask);
    timeline.seq = 0;
    $("timeline").replaceChildren();
    events.events.forEach((event) => addEvent(event, false));
  }

  function showAsk(ask) {
    timeline.ask = ask;
    $("ask-title").textContent = "Ask in " + visibleId(ask.conversation_id);
    $("ask-prompt").textContent = visibleText(ask.prompt);
    const facts = [
      ["Status", ask.status],
      ["Outcome", ask.outcome && ask.outcome !== ask.status ? visibleId(ask.outcome) : ""],
      ["Answer", ask.answer !== null && ask.answer !== undefined ? visibleText(ask.answer) : ""],
      ["Closed", closedByNote(ask)],
      ["Asked at", when(ask.asked_at, true)],
      ["Closed at", when(ask.closed_at || ask.answered_at, true)],
      ["Time to answer", ask.status === "answered" ? duration(answerSeconds(ask)) : ""],
      ["Options", ask.kind === "choice" ? ask.options.map((label, i) => i + 1 + ". " + visibleText(label)).join("  ") : "free text"],
      ["Responders", (ask.responders || []).map(personText).join(", ") + (ask.quorum > 1 ? " · " + ask.quorum + " must agree" : "")],
      ["Votes", (ask.votes || []).map((vote) => personText(vote.sender) + ": " + vote.option_index + ". " + visibleText(vote.answer)).join("; ")],
      ["Parked by", ask.owner ? visibleId(ask.owner) : ""],
      ["Ask id", visibleId(ask.ask_id)],
      ["Conversation", visibleId(ask.conversation_id)],
    ];
    posts(ask).forEach(([name, where]) => facts.push(["Posted on " + visibleId(name), visibleText(JSON.stringify(where))]));
    $("ask-facts").replaceChildren(
      ...facts.filter(([, value]) => value).flatMap(([name, value]) => {
        const term = document.createElement("dt");
        term.textContent = name;
        const detail = document.createElement("dd");
        detail.textContent = value;
        detail.dataset.fact = name;
        return [term, detail];
      }),
    );
    $("ask-cancel").hidden = ask.status !== "open";
    $("ask-cancel").disabled = false;
  }

  // What an event says, in words: who did what (its sender is shown beside it).
  function eventWords(event) {
    const d = event.data || {};
    const list = (names) => (names || []).map(personText).join(", ");
    switch (event.type) {
      case "parked":
        return ["parked", d.owner ? "by " + visibleId(d.owner) : "",
          d.responders && d.responders.length ? "for " + list(d.responders) : "", d.quorum > 1 ? d.quorum + " must agree" : "",
          d.ttl_seconds ? "TTL " + duration(d.ttl_seconds) : "", d.channel ? "on " + visibleId(d.channel) : ""];
      case "touched":
        return [visibleId(d.kind || "message"), d.text !== undefined && d.text !== null ? "“" + visibleText(d.text) + "”" : "",
          d.option_index ? "option " + d.option_index : ""];
      case "refused":
        return ["refused: " + visibleId(d.kind || "not_yours")];
      case "voted":
        return ["voted " + (d.option_index ? d.option_index + ". " : "") + visibleText(d.answer || ""),
          d.quorum ? d.votes + " of " + d.quorum + " votes" : ""];
      case "reminded":
        return ["reminder " + (d.number || ""), d.to && d.to.length ? "to " + list(d.to) : ""];
      case "escalated":
        return ["escalated", d.to && d.to.length ? "to " + list(d.to) : ""];
      case "closed":
        return ["closed: " + visibleId(d.status || ""), d.outcome && d.outcome !== d.status ? "outcome " + visibleId(d.outcome) : "",
          d.closed_by ? "by " + personText(d.closed_by) : "", d.reason ? "reason: " + visibleText(d.reason) : ""];
      case "delivered":
        return [visibleId(d.target || "delivery") + " to " + visibleId(d.host || "?"), d.attempt ? "attempt " + d.attempt : "",
          d.status ? "HTTP " + d.status : "", d.latency_ms !== undefined && d.latency_ms !== null ? d.latency_ms + " ms" : "",
          visibleId(d.result || "")];
      case "posted":
        return [visibleId(d.job || "post") + " on " + visibleId(d.channel || "?"), visibleId(d.result || "")];
      case "late":
        return ["late " + visibleId(d.surface || "") + " answer", d.text ? "“" + visibleText(d.text) + "”" : "",
          "after it closed " + visibleId(d.status || "") + (d.closed_at ? " at " + when(d.closed_at, true) : "")];
      default:
        return [visibleId(event.type), visibleText(JSON.stringify(d))];
    }
  }

  function addEvent(event, fresh) {
    if (event.seq <= timeline.seq) return; // already shown
    timeline.seq = event.seq;
    const item = document.createElement("li");
    item.className = "event event-" + String(event.type).replace(/[^a-z_]/g, "") + (fresh ? " fresh" : "");
    item.dataset.seq = event.seq;
    item.dataset.type = event.type;
    const head = document.createElement("div");
    head.className = "who";
    const time = document.createElement("time");
    time.dateTime = event.at;
    time.textContent = when(event.at, true);
    head.append(time, badge(event.type));
    if (event.sender) {
      const sender = person(event.sender); // a display name, its id in the tooltip
      sender.classList.add("sender");
      head.appendChild(sender);
    }
    const body = document.createElement("div");
    body.className = "what";
    body.textContent = eventWords(event).filter(Boolean).join(" · ");
    item.append(head, body);
    $("timeline").appendChild(item);
    $("timeline-count").textContent = "(" + $("timeline").children.length + ")";
  }

  async function cancelThisAsk() {
    const ask = timeline.ask;
    if (!ask) return;
    const button = $("ask-cancel");
    if (!confirmedCancel(ask)) return;
    button.disabled = true;
    try {
      const closed = await api("POST", "/v1/asks/" + encodeURIComponent(ask.ask_id) + "/cancel");
      setStatus("Ask in " + visibleId(ask.conversation_id) + " is now " + closed.status + ".");
      if (!live.connected) await loadAsk(); // with the stream, its close event redraws the page
    } catch (error) {
      setStatus(error.message, true);
      button.disabled = false;
    }
  }

  // -- charts: the figures of a window, drawn as inline SVG (charts.js) -----------------
  const charts = { data: null, width: 0 };
  const DAY = 86400000;

  function chartsWindow() {
    let since = view.params.get("since");
    if (!since) {
      const start = new Date(Date.now() - 6 * DAY);
      start.setHours(0, 0, 0, 0);
      since = start.toISOString();
    }
    return { since, until: view.params.get("until") || "" };
  }

  async function loadCharts() {
    const span = chartsWindow();
    $("c-since").value = localOf(span.since);
    $("c-until").value = localOf(span.until);
    const base = "since=" + encodeURIComponent(span.since) + (span.until ? "&until=" + encodeURIComponent(span.until) : "");
    let day, responder, channel;
    try {
      [day, responder, channel] = await Promise.all(
        ["day", "responder", "channel"].map((by) => api("GET", "/v1/stats?" + base + "&by=" + by)),
      );
    } catch (error) {
      setStatus(error.message, true);
      return;
    }
    if ($("status").className === "error") setStatus("");
    charts.data = { day, responder, channel };
    drawCharts();
  }

  function drawCharts() {
    if (!charts.data) return;
    const { day, responder, channel } = charts.data;
    const total = day.total;
    const plural = (n, one, many) => n + " " + (n === 1 ? one : many);
    $("charts-total").textContent = [
      plural(total.opened, "ask opened", "asks opened"), total.answered + " answered", total.expired + " expired",
      total.cancelled + " cancelled", plural(total.reminders, "reminder", "reminders"),
      plural(total.escalations, "escalation", "escalations"),
      (total.misses_per_ask === null || total.misses_per_ask === undefined ? "—" : Number(total.misses_per_ask).toFixed(2)) + " misses per ask",
    ].join(" · ");
    const box = $("charts");
    const width = Math.max(240, Math.floor(box.clientWidth || 600));
    charts.width = width;
    const wide = width >= 900;
    const figureWidth = wide ? Math.floor((width - 24) / 2) : width;
    const dayLabel = (key) => (/^\d{4}-\d{2}-\d{2}/.test(key) ? key.slice(5, 10) : visibleId(key));
    const tta = total.time_to_answer || {};
    const figures = [
      ["chart-time", "Time to answer (" + plural(tta.count || 0, "answer", "answers") + ")", charts_.columns,
        ["p50", "p90", "p99"].map((p) => ({ label: p, value: tta[p] === undefined ? null : tta[p] })), duration],
      ["chart-time-day", "Time to answer per day (p50)", charts_.points,
        day.groups.map((g) => ({ label: dayLabel(g.key), value: g.time_to_answer.p50, note: plural(g.time_to_answer.count, "answer", "answers") })), duration],
      ["chart-expired", "Expired per day", charts_.columns,
        day.groups.map((g) => ({ label: dayLabel(g.key), value: g.expired, note: g.opened + " opened", tone: "warn" })), String],
      ["chart-age", "Open asks by age", charts_.columns,
        Object.entries(total.open_by_age || {}).map(([bucket, count]) => ({ label: bucket, value: count })), String],
      ["chart-responders", "Time to answer per responder (p50)", charts_.rows,
        responder.groups.map((g) => ({ label: visibleId(g.key), value: g.time_to_answer.p50,
          note: g.answered + " answered · " + g.expired + " expired" })), duration],
      ["chart-channels", "Asks per channel", charts_.rows,
        channel.groups.map((g) => ({ label: visibleId(g.key), value: g.opened,
          note: g.answered + " answered · " + g.expired + " expired · p50 " + duration(g.time_to_answer.p50) })), String],
    ];
    box.replaceChildren(
      ...figures.map(([id, title, draw, items, format]) => {
        const figure = document.createElement("figure");
        figure.id = id;
        figure.className = "chart-box";
        const caption = document.createElement("figcaption");
        caption.textContent = title;
        figure.append(caption, draw(title, items, figureWidth - 2, format));
        return figure;
      }),
    );
  }
  const charts_ = window.parkgateCharts;

  // -- live updates: the event stream (server-sent events) -------------------------------
  // Read with fetch, not EventSource: EventSource cannot send the Authorization header the
  // API's token goes in. The parser follows the SSE format (id:, event:, data:, blank line),
  // and a reconnect sends Last-Event-ID, so no event is missed across a dropped connection.
  // retryMs: the server's "retry" (how soon to reconnect after a stream ends); backoffMs: the
  // wait after a failed connection, doubled each time up to 15 s.
  const live = { connected: false, lastId: "", controller: null, retryMs: 1000, backoffMs: 1000, count: 0, timer: null, refreshing: null };

  function setLive(text) {
    $("live").textContent = "Live updates: " + text;
    $("live").className = "live" + (live.connected ? " on" : "");
  }

  function reconnectLater(ms) {
    clearTimeout(live.timer);
    live.timer = setTimeout(connectLive, ms);
  }

  async function connectLive() {
    if (live.controller) live.controller.abort();
    const controller = new AbortController();
    live.controller = controller;
    const headers = { Accept: "text/event-stream" };
    if (token()) headers.Authorization = "Bearer " + token();
    if (live.lastId) headers["Last-Event-ID"] = live.lastId;
    let response;
    try {
      response = await fetch("/v1/events/stream", { headers, signal: controller.signal, cache: "no-store" });
    } catch (error) {
      if (controller.signal.aborted) return;
      liveDown("reconnecting…", live.backoffMs);
      return;
    }
    if (!response.ok || !response.body) {
      if (response.body) response.body.cancel().catch(() => undefined); // the refusal's body is not read
      // No stream on this server (404), or no token for it: poll instead, and try again later.
      const why = response.status === 404 ? "off (no event stream here)" : response.status === 401 || response.status === 403 ? "off (the token cannot read the stream)" : "reconnecting…";
      liveDown(why, response.status === 404 ? 60000 : live.backoffMs);
      return;
    }
    live.connected = true;
    live.backoffMs = 1000;
    setLive("on" + (live.count ? " · " + live.count + " events" : ""));
    try {
      await readStream(response.body.getReader(), controller);
    } catch (error) {
      // a dropped connection: reconnect below
    }
    if (controller.signal.aborted) return;
    // A stream ends by design (the server holds one for a while): resume where it stopped.
    live.connected = false;
    reconnectLater(live.retryMs);
  }

  function liveDown(text, ms) {
    live.connected = false;
    setLive(text);
    live.backoffMs = Math.min(live.backoffMs * 2, 15000);
    reconnectLater(ms);
  }

  async function readStream(reader, controller) {
    const decoder = new TextDecoder();
    let buffer = "";
    let message = { id: null, event: "message", data: [] };
    for (;;) {
      const { value, done } = await reader.read();
      if (done || controller.signal.aborted) return;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
        if (line === "") {
          if (message.id !== null) live.lastId = message.id; // an id without data still says where to resume
          if (message.data.length) dispatch(message);
          message = { id: null, event: "message", data: [] };
          continue;
        }
        if (line.startsWith(":")) continue; // a comment: the server's keep-alive
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") message.id = text;
        else if (field === "event") message.event = text;
        else if (field === "data") message.data.push(text);
        else if (field === "retry" && /^\d+$/.test(text)) live.retryMs = Number(text);
      }
    }
  }

  function dispatch(message) {
    let event;
    try {
      event = JSON.parse(message.data.join("\n"));
    } catch (error) {
      return;
    }
    if (!event.type) event.type = message.event;
    live.count += 1;
    setLive("on · " + live.count + (live.count === 1 ? " event" : " events"));
    onLiveEvent(event);
  }

  function onLiveEvent(event) {
    if (view.name === "open") {
      // Several events in a burst are one refresh of the list.
      clearTimeout(live.refreshing);
      live.refreshing = setTimeout(() => {
        refreshAsks();
        if (event.type === "delivered" || event.type === "closed") refreshFailed();
      }, 150);
    }
    if (view.name === "ask" && event.ask_id === view.askId) {
      if (event.seq === timeline.seq + 1) {
        addEvent(event, true);
        if (event.type !== "delivered" && event.type !== "posted") {
          api("GET", "/v1/asks/" + encodeURIComponent(view.askId)).then(showAsk, () => undefined);
        }
      } else if (event.seq > timeline.seq) {
        loadAsk(); // one missed: read the whole timeline again
      }
    }
  }

  // -- wiring ----------------------------------------------------------------------
  function init() {
    $("token").value = token();
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
      setStatus("Token set for this tab.");
      paging.shown = "";
      refreshDirectory();
      route();
      refreshFailed();
      live.backoffMs = 1000;
      connectLive();
    });
    $("refresh").addEventListener("click", () => {
      paging.shown = "";
      refreshDirectory();
      refreshAsks();
      refreshFailed();
    });
    $("asks-next").addEventListener("click", nextPage);
    $("asks-first").addEventListener("click", firstPage);
    $("select-all").addEventListener("change", selectAll);
    $("cancel-selected").addEventListener("click", confirmCancel);
    $("confirm").addEventListener("close", cancelSelected);
    $("history-filters").addEventListener("submit", (event) => {
      event.preventDefault();
      go("#/history?" + historyQuery().toString());
    });
    $("history-filters").addEventListener("reset", (event) => {
      event.preventDefault();
      view.params = new URLSearchParams();
      showHistoryFilters();
      go("#/history");
    });
    $("history-next").addEventListener("click", () => historyPage(1));
    $("history-previous").addEventListener("click", () => historyPage(-1));
    $("ask-cancel").addEventListener("click", cancelThisAsk);
    $("ask-back").addEventListener("click", (event) => {
      // Back to where the operator came from (the history's page, say), else the open asks.
      if (cameFrom) {
        event.preventDefault();
        window.history.back();
      }
    });
    $("charts-window").addEventListener("submit", (event) => {
      event.preventDefault();
      const query = new URLSearchParams();
      if (isoOf($("c-since").value)) query.set("since", isoOf($("c-since").value));
      if (isoOf($("c-until").value)) query.set("until", isoOf($("c-until").value));
      go("#/charts?" + query.toString());
    });
    if (window.ResizeObserver) {
      new ResizeObserver(() => {
        const width = Math.floor($("charts").clientWidth);
        if (view.name === "charts" && width && width !== charts.width) drawCharts();
      }).observe($("charts"));
    }
    $("chat-start").addEventListener("submit", startDemo);
    $("chat-send").addEventListener("submit", send);
    $("chat-conversation").value = "demo-" + Math.random().toString(36).slice(2, 8);
    window.addEventListener("hashchange", () => {
      cameFrom = true;
      route();
    });
    refreshDirectory();
    route();
    refreshFailed();
    connectLive();
    // Polling stands in for the stream while it is down; with it up, only the slow refresh runs.
    let lastPoll = 0;
    setInterval(() => {
      const now = Date.now();
      if (view.name !== "open" || (live.connected && now - lastPoll < LIVE_REFRESH_MS)) return;
      lastPoll = now;
      refreshAsks();
    }, REFRESH_MS);
    setInterval(refreshDirectory, REFRESH_MS * 5);
    setInterval(refreshFailed, REFRESH_MS * 5);
  }
  let cameFrom = false;

  init();
})();
