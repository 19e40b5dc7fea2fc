-- A shop's mix under wrk (closed loop): creates of 1-3 items over WRK_SKUS SKUs (1000) with deadlines 5-15 s away, a
-- pay of 60% of them 1-3 s after their create was answered (before the deadline), and one status read of each order
-- 1-15 s after it (before or after its pay or its close). Whatever is due is sent first; creates fill the rest, so the
-- shares hold at whatever rate the service gives: for each create 0.6 pays and one read, the unpaid 40% closed by the
-- service on their deadline. WRK_KEY is the user API key. done() prints what was sent of each, and the answers 409 (a
-- pay after its order's close; a create here gets none: fresh keys, stock enough), from WRK_COUNT_FROM (a time in
-- seconds since the epoch; 0: from the start), so that a warm-up in the same run leaves the pays and reads it planned
-- to the counted seconds, as a steady shop does; and the answers of the whole run that were neither 2xx nor 409.
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } mix_timespec;
  int clock_gettime(int clock, mix_timespec *now);
]]
local CLOCK_MONOTONIC = 1
local SLOT_MILLIS = 10 -- pays and reads are due by slots of this many milliseconds

-- the script's own folder, whatever the working directory wrk was started from
local order_items = dofile((debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "") .. "order-items.lua")
local skus = tonumber(os.getenv("WRK_SKUS") or "1000")
local key = os.getenv("WRK_KEY") or "dev-user-key"
local count_from = tonumber(os.getenv("WRK_COUNT_FROM") or "0")
local threads = {}

-- per thread (globals, so that done() can read them through thread:get)
creates, pays, reads, refused, unexpected = 0, 0, 0, 0, 0
local sent = 0
local prefix
local due = {} -- slot -> the pays and reads due in it, as {pay = bool, id = string}
local cursor -- the earliest slot that may still hold something due
local timespec = ffi.new("mix_timespec")

local function now_slot()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, timespec)
  return math.floor((tonumber(timespec.tv_sec) * 1000 + tonumber(timespec.tv_nsec) / 1e6) / SLOT_MILLIS)
end

function setup(thread)
  table.insert(threads, thread)
  thread:set("thread_id", #threads)
end

function init(args)
  math.randomseed(os.time() + thread_id)
  prefix = "mix-" .. tostring(thread_id) .. "-" .. tostring(os.time()) .. "-" .. tostring(math.random(1000000))
  cursor = now_slot()
end

local function headers()
  return { ["Authorization"] = "Bearer " .. key }
end

local function schedule(after_millis, entry)
  local at = now_slot() + math.ceil(after_millis / SLOT_MILLIS)
  due[at] = due[at] or {}
  table.insert(due[at], entry)
end

local function counted()
  return os.time() >= count_from
end

local function create()
  sent = sent + 1
  if counted() then
    creates = creates + 1
  end
  local body = '{"userId":"u-' .. math.random(100000) .. '","timeoutSeconds":' .. (4 + math.random(11))
      .. ',"items":' .. order_items(skus) .. '}'
  local h = headers()
  h["Content-Type"] = "application/json"
  h["Idempotency-Key"] = prefix .. "-" .. sent
  return wrk.format("POST", "/v1/orders", h, body)
end

function request()
  local now = now_slot()
  while cursor <= now do
    local list = due[cursor]
    if list and #list > 0 then
      local entry = table.remove(list)
      if entry.pay then
        pays = pays + (counted() and 1 or 0)
        return wrk.format("POST", "/v1/orders/" .. entry.id .. "/pay", headers())
      end
      reads = reads + (counted() and 1 or 0)
      return wrk.format("GET", "/v1/orders/" .. entry.id, headers())
    end
    due[cursor] = nil
    cursor = cursor + 1
  end
  return create()
end

function response(status, answer_headers, body)
  if status == 201 then
    local id = body:match('"id":"(%d+)"')
    if id == nil then
      unexpected = unexpected + 1
      return
    end
    if math.random(100) <= 60 then
      schedule(1000 + math.random(2000), { pay = true, id = id })
    end
    schedule(1000 + math.random(14000), { pay = false, id = id })
  elseif status == 409 then
    refused = refused + (counted() and 1 or 0)
  elseif status ~= 200 then
    unexpected = unexpected + 1
  end
end

function done(summary, latency, requests)
  local sums = { creates = 0, pays = 0, reads = 0, refused = 0, unexpected = 0 }
  for _, thread in ipairs(threads) do
    for name, _ in pairs(sums) do
      sums[name] = sums[name] + thread:get(name)
    end
  end
  io.write(string.format("mix: creates %d pays %d reads %d refused %d unexpected %d\n", sums.creates, sums.pays,
      sums.reads, sums.refused, sums.unexpected))
end
