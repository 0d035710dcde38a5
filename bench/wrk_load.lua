-- The HTTP benchmarks' load for wrk (bench/wrk.py runs it; see bench/README.md).
--
--   wrk -t1 -c32 -d30s -s bench/wrk_load.lua http://127.0.0.1:PORT -- COUNT MODE TAG CONVERSATIONS PREFIX SEED [THREADS]
--
-- Conversation ids are PREFIX0 .. PREFIX<CONVERSATIONS - 1>. MODE picks the request:
--   "messages": POST /v1/conversations/{id}/messages to a random parked conversation, a
--     non-answer or `menu`, each with its own message_id (TAG-thread-i), so every request
--     runs the whole reply path and the conversations stay parked (benchmark 4).
--   "pass": a message to a random conversation with nothing parked, without message_id.
--   "pass_id": the same with its own message_id (the reply is stored for redelivery).
--   "retry": a non-answer with its own message_id to a random parked conversation.
--   "select": `1` with its own message_id to the next parked conversation, each once:
--     thread n of THREADS takes the n-th share of the ids in order.
--   "healthz": GET /healthz.
-- A thread stops after COUNT responses and says so on stderr ("PARKGATE_WRK_THREAD_DONE");
-- -d bounds the time. wrk itself waits out -d unless it gets SIGINT, so bench/wrk.py sends
-- it once every thread is done. The elapsed time is taken here (first request to last
-- response, on the monotonic clock through LuaJIT's FFI). done() prints one line,
-- "PARKGATE_WRK {json}", that the benchmark reads: requests, elapsed time, latency
-- percentiles, statuses and reply kinds.

local ffi = require("ffi")
ffi.cdef([[
  typedef struct { long tv_sec; long tv_nsec; } parkgate_timespec;
  int clock_gettime(int clock, parkgate_timespec *out);
]])
local CLOCK_MONOTONIC = 1
local texts = { "not sure yet", "which one is best?", "menu", "hmm" }
local threads = {}

local function now_us()
  local moment = ffi.new("parkgate_timespec")
  ffi.C.clock_gettime(CLOCK_MONOTONIC, moment)
  return tonumber(moment.tv_sec) * 1e6 + tonumber(moment.tv_nsec) / 1e3
end

function setup(thread)
  thread:set("number", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  limit = tonumber(args[1])
  mode = args[2]
  tag = args[3] .. "-" .. number
  parked = tonumber(args[4])
  prefix = args[5]
  share = math.floor(parked / (tonumber(args[7]) or 1))
  sent, received, finished = 0, 0, false
  statuses, kinds = {}, {}
  math.randomseed((tonumber(args[6]) or 0) * 7919 + number)
end

function request()
  if sent == 0 then
    first_us = now_us()
  end
  sent = sent + 1
  if mode == "healthz" then
    return wrk.format("GET", "/healthz")
  end
  local index = math.random(0, parked - 1)
  local text = texts[(sent % #texts) + 1]
  local id = string.format(',"message_id":"%s-%d"', tag, sent)
  if mode == "pass" then
    text, id = "hello there", ""
  elseif mode == "pass_id" then
    text = "hello there"
  elseif mode == "retry" then
    text = "not sure yet"
  elseif mode == "select" then
    index, text = (number - 1) * share + sent - 1, "1"
  end
  local body = string.format('{"text":"%s"%s}', text, id)
  return wrk.format("POST", "/v1/conversations/" .. prefix .. tostring(index) .. "/messages",
    { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  received = received + 1
  last_us = now_us()
  local code = tostring(status)
  statuses[code] = (statuses[code] or 0) + 1
  if mode ~= "healthz" and body then
    local kind = string.match(body, '"kind"%s*:%s*"([%a_]+)"')
    if kind then
      kinds[kind] = (kinds[kind] or 0) + 1
    end
  end
  if received >= limit and not finished then
    finished = true
    io.stderr:write("PARKGATE_WRK_THREAD_DONE\n")
    wrk.thread:stop()
  end
end

local function counts_json(merged)
  local parts = {}
  for key, value in pairs(merged) do
    table.insert(parts, string.format('"%s":%d', key, value))
  end
  table.sort(parts)
  return "{" .. table.concat(parts, ",") .. "}"
end

function done(summary, latency, requests)
  local merged_statuses, merged_kinds = {}, {}
  local first, last = math.huge, 0
  for _, thread in ipairs(threads) do
    first = math.min(first, thread:get("first_us") or math.huge)
    last = math.max(last, thread:get("last_us") or 0)
    for key, value in pairs(thread:get("statuses") or {}) do
      merged_statuses[key] = (merged_statuses[key] or 0) + value
    end
    for key, value in pairs(thread:get("kinds") or {}) do
      merged_kinds[key] = (merged_kinds[key] or 0) + value
    end
  end
  local errors = summary.errors
  io.write(string.format(
    'PARKGATE_WRK {"requests":%d,"elapsed_us":%.0f,"p50_us":%d,"p99_us":%d,"mean_us":%.1f,'
      .. '"socket_errors":%d,"statuses":%s,"kinds":%s}\n',
    summary.requests, last > first and last - first or 0, latency:percentile(50), latency:percentile(99),
    latency.mean,
    errors.connect + errors.read + errors.write + errors.timeout,
    counts_json(merged_statuses), counts_json(merged_kinds)))
end
