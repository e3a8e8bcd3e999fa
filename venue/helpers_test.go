package venue

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"
)

// epoch is the fake clock's start in most tests.
var epoch = time.Date(2026, 8, 20, 17, 0, 0, 0, time.UTC)

type harness struct {
	t     testing.TB
	v     *engine
	clock *clockwork.FakeClock
	key   string
	priv  ed25519.PrivateKey
}

// setup builds a venue on a fake clock at epoch with the demo account.
func setup(t testing.TB, cfg engineConfig) *harness {
	t.Helper()
	clk := clockwork.NewFakeClockAt(epoch)
	cfg.Clock = clk
	v, err := newEngine(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &harness{t: t, v: v, clock: clk, key: demoAPIKey, priv: demoPrivateKey()}
}

// sign returns the three auth headers for a request at the clock's time.
func (h *harness) sign(method, target string, body []byte, ts time.Time) http.Header {
	tss := strconv.FormatInt(ts.Unix(), 10)
	msg := []byte(h.key + tss + target + method + string(body))
	return http.Header{
		"X-Api-Key":   {h.key},
		"X-Timestamp": {tss},
		"X-Signature": {base64.StdEncoding.EncodeToString(ed25519.Sign(h.priv, msg))},
	}
}

// do serves one signed request in memory and returns the response and body.
func (h *harness) do(method, target string, body []byte) (*http.Response, []byte) {
	h.t.Helper()
	return h.doHeader(method, target, body, h.sign(method, target, body, h.clock.Now()))
}

func (h *harness) doHeader(method, target string, body []byte, hdr http.Header) (*http.Response, []byte) {
	h.t.Helper()
	r := httptest.NewRequest(method, "https://venue.test"+target, bytes.NewReader(body))
	r.RequestURI = target
	for k, vs := range hdr {
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	dropped := func() (dropped bool) {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					panic(p)
				}
				dropped = true
			}
		}()
		h.v.ServeHTTP(w, r)
		return false
	}()
	if dropped {
		return &http.Response{StatusCode: 0, Header: http.Header{}}, nil
	}
	resp := w.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// json decodes b into a generic value, keeping numbers as json.Number.
func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

func mustStatus(t testing.TB, resp *http.Response, body []byte, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, want, body)
	}
}

func dec(t testing.TB, v any) decimal.Decimal {
	t.Helper()
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	default:
		t.Fatalf("not a decimal: %#v", v)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		t.Fatalf("decimal %q: %v", s, err)
	}
	return d
}

func orderBody(cid, side, typ, symbol, cfg string) []byte {
	return []byte(`{"client_order_id":"` + cid + `","side":"` + side + `","type":"` + typ + `","symbol":"` + symbol +
		`","` + typ + `_order_config":` + cfg + `}`)
}

const ordersTarget = "/api/v2/crypto/trading/orders/?account_number=" + demoAccountNumber

// create posts an order and returns the decoded response.
func (h *harness) create(body []byte, wantStatus int) map[string]any {
	h.t.Helper()
	resp, b := h.do("POST", ordersTarget, body)
	mustStatus(h.t, resp, b, wantStatus)
	return decode(h.t, b)
}

func (h *harness) getOrder(id string) map[string]any {
	h.t.Helper()
	resp, b := h.do("GET", pathOrders+id+"/", nil)
	mustStatus(h.t, resp, b, 200)
	return decode(h.t, b)
}
