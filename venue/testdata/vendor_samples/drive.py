"""Drive one of the vendor's sample clients through every call it defines.

usage: python3 drive.py v1|v2 SAMPLE.py

SAMPLE.py is the vendor's script with only its API key, private key and base
URL filled in. This file is tradewire's: it is the "BUILD YOUR TRADING
STRATEGY HERE" part the samples leave to their reader. It runs the sample's
main(), then each method of its client class, and prints one JSON line per
call: {"call": ..., "ok": true|false, "detail": ...}, then {"done": N}.

A call is ok when it returned an answer that is not the venue's error
envelope ({"type": ..., "errors": [...]}) and, for the v2 sample, when the
sample did not report an HTTP error. Quantities are the driver's: the
samples' commented-out 0.000001 BTC (v2) is below the venue's 0.1 USD
min_order_amount at its prices.
"""

import contextlib
import importlib.util
import io
import json
import sys
import uuid

import requests


def load(path):
    spec = importlib.util.spec_from_file_location("vendor_sample", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def is_error(x):
    return isinstance(x, dict) and ("errors" in x or "error" in x)


def main():
    version, path = sys.argv[1], sys.argv[2]
    mod = load(path)
    out = []

    def report(name, ok, detail=""):
        out.append(name)
        print(json.dumps({"call": name, "ok": bool(ok), "detail": str(detail)[:300]}), flush=True)

    def call(name, fn, *args, check=None):
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                res = fn(*args)
        except Exception as e:  # the sample's own failure, reported as such
            report(name, False, f"{type(e).__name__}: {e}")
            return None
        printed = buf.getvalue()
        ok = res is not None and not is_error(res) and "HTTP Error" not in printed
        ok = ok and "Error making API request" not in printed
        if ok and check is not None:
            ok = check(res)
        report(name, ok, printed.strip() or json.dumps(res)[:300])
        return res

    # The sample's own main(), as the docs tell a reader to run it.
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            mod.main()
        printed = buf.getvalue()
        want = "'account_number'" if version == "v1" else "'symbol'"
        report("main", want in printed and "errors" not in printed and "Error" not in printed, printed.strip())
    except Exception as e:
        report("main", False, f"{type(e).__name__}: {e}")

    if version == "v1":
        c = mod.CryptoAPITrading()
        call("get_account", c.get_account, check=lambda r: "account_number" in r)
        call("get_trading_pairs", c.get_trading_pairs, check=lambda r: len(r["results"]) > 0)
        call("get_trading_pairs(BTC-USD, ETH-USD)", c.get_trading_pairs, "BTC-USD", "ETH-USD",
             check=lambda r: len(r["results"]) == 2)
        call("get_holdings", c.get_holdings, check=lambda r: len(r["results"]) > 0)
        call("get_holdings(BTC, ETH)", c.get_holdings, "BTC", "ETH", check=lambda r: len(r["results"]) == 2)
        call("get_best_bid_ask", c.get_best_bid_ask, check=lambda r: len(r["results"]) > 0)
        call("get_best_bid_ask(BTC-USD)", c.get_best_bid_ask, "BTC-USD", check=lambda r: len(r["results"]) == 1)
        call("get_estimated_price", c.get_estimated_price, "BTC-USD", "both", "0.1,1,1.999",
             check=lambda r: len(r["results"]) == 6)
        call("place_order(market)", c.place_order, str(uuid.uuid4()), "buy", "market", "BTC-USD",
             {"asset_quantity": "0.0001"}, check=lambda r: r.get("state") == "filled")
        o = call("place_order(limit)", c.place_order, str(uuid.uuid4()), "buy", "limit", "BTC-USD",
                 {"asset_quantity": "0.0001", "limit_price": "1000.00"}, check=lambda r: r.get("state") == "open")
        oid = (o or {}).get("id", "")
        call("get_order", c.get_order, oid, check=lambda r: r.get("id") == oid)
        call("get_orders", c.get_orders, check=lambda r: len(r["results"]) > 0)
        # The sample's cancel_order posts with json=json.loads(""): it
        # raises before it sends anything.
        call("cancel_order", c.cancel_order, oid)
        # The same cancel, signed by the sample's own get_authorization_header
        # and sent without the json.loads: the v1 answer is text/plain.
        p = f"/api/v1/crypto/trading/orders/{oid}/cancel/"
        h = c.get_authorization_header("POST", p, "", c._get_current_timestamp())
        try:
            r = requests.post(c.base_url + p, headers=h, timeout=10)
            report("cancel_order(signed by the sample, no body)",
                   r.status_code == 200 and r.text == f"Cancel request was submitted for order {oid}",
                   f"{r.status_code} {r.text}")
        except requests.RequestException as e:
            report("cancel_order(signed by the sample, no body)", False, e)
    else:
        c = mod.CryptoAPITradingV2()
        accts = call("get_accounts", c.get_accounts, check=lambda r: len(r["results"]) == 1)
        acct = (accts or {"results": [{}]})["results"][0].get("account_number", "")
        call("get_trading_pairs", c.get_trading_pairs, check=lambda r: len(r) > 0)
        call("get_trading_pairs(BTC-USD, ETH-USD)", c.get_trading_pairs, "BTC-USD", "ETH-USD",
             check=lambda r: len(r) == 2)
        call("get_holdings", c.get_holdings, acct, check=lambda r: len(r["results"]) > 0)
        call("get_holdings(BTC, ETH)", c.get_holdings, acct, "BTC", "ETH", check=lambda r: len(r["results"]) == 2)
        call("get_best_bid_ask(BTC-USD)", c.get_best_bid_ask, "BTC-USD", check=lambda r: len(r["results"]) == 1)
        call("get_best_bid_ask(BTC-USD, ETH-USD)", c.get_best_bid_ask, "BTC-USD", "ETH-USD",
             check=lambda r: len(r["results"]) == 2)
        call("get_estimated_price", c.get_estimated_price, "BTC-USD", "both", "0.01",
             check=lambda r: len(r["results"]) == 2)
        call("place_order(market)", c.place_order, acct, str(uuid.uuid4()), "buy", "market", "BTC-USD",
             {"asset_quantity": "0.0001"}, check=lambda r: r.get("state") == "filled")
        o = call("place_order(limit)", c.place_order, acct, str(uuid.uuid4()), "buy", "limit", "BTC-USD",
                 {"asset_quantity": "0.0001", "limit_price": "1000.00"}, check=lambda r: r.get("state") == "open")
        oid = (o or {}).get("id", "")
        call("get_order", c.get_order, acct, oid, check=lambda r: r.get("id") == oid)
        call("get_orders", c.get_orders, acct, check=lambda r: len(r["results"]) > 0)
        call("cancel_order", c.cancel_order, oid, check=lambda r: r.get("id") == oid)
    print(json.dumps({"done": len(out), "requests_module": requests.__file__}), flush=True)


if __name__ == "__main__":
    main()
