-- POST /v1/orders with a fresh Idempotency-Key per request.
-- SKU spread from the environment: WRK_SKUS=1000 spreads 1-3 items over SKU-0..SKU-999 (realistic);
-- WRK_SKUS=1 sends every order for one unit of SKU-FLASH (flash sale). WRK_KEY is the user API key.
local skus = tonumber(os.getenv("WRK_SKUS") or "1000")
local key = os.getenv("WRK_KEY") or "dev-user-key"
-- the script's own folder, whatever the working directory wrk was started from
local order_items = dofile((debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "") .. "order-items.lua")
local thread_counter = 0
local counter = 0
local prefix

function setup(thread)
  thread_counter = thread_counter + 1
  thread:set("thread_id", thread_counter)
end

function init(args)
  prefix = "wrk-" .. tostring(thread_id) .. "-" .. tostring(os.time()) .. "-" .. tostring(math.random(1000000))
  math.randomseed(os.time() + thread_id)
end

local function body()
  local user = "u-" .. math.random(100000)
  if skus == 1 then
    return '{"userId":"' .. user .. '","items":[{"sku":"SKU-FLASH","qty":1}]}'
  end
  return '{"userId":"' .. user .. '","items":' .. order_items(skus) .. '}'
end

function request()
  counter = counter + 1
  local headers = {}
  headers["Authorization"] = "Bearer " .. key
  headers["Content-Type"] = "application/json"
  headers["Idempotency-Key"] = prefix .. "-" .. counter
  return wrk.format("POST", "/v1/orders", headers, body())
end
