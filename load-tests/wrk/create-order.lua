-- POST /v1/orders with a fresh Idempotency-Key per request.
-- SKU spread from the environment: WRK_SKUS=1000 spreads 1-3 items over SKU-0..SKU-999 (realistic);
-- WRK_SKUS=1 sends every order for one unit of SKU-FLASH (flash sale). WRK_KEY is the user API key.
local skus = tonumber(os.getenv("WRK_SKUS") or "1000")
local key = os.getenv("WRK_KEY") or "dev-user-key"
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
  local n = math.random(3)
  local first = math.random(skus) - 1
  local items = {}
  for i = 1, n do
    items[i] = '{"sku":"SKU-' .. ((first + (i - 1) * 131) % skus) .. '","qty":' .. math.random(3) .. '}'
  end
  return '{"userId":"' .. user .. '","items":[' .. table.concat(items, ",") .. ']}'
end

function request()
  counter = counter + 1
  local headers = {}
  headers["Authorization"] = "Bearer " .. key
  headers["Content-Type"] = "application/json"
  headers["Idempotency-Key"] = prefix .. "-" .. counter
  return wrk.format("POST", "/v1/orders", headers, body())
end
