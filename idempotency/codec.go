package idempotency

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// How the bbolt store encodes a record. An open record is JSON, whole. A
// settled one is compacted (see compacted) and written in a binary form a
// few times smaller, so that a day of history costs little:
//
//	0x01                          the form's version
//	text  Key, Namespace, AccountNumber, Symbol, Fingerprint, OrderID, Reason
//	byte  the state's code (states), or 0 and a text
//	uvarint Sends
//	byte  flags: bit 0 Answered2xx, bits 1–4 which times are set
//	varint CreatedAt (Unix ns), then the other times as deltas from it
//	text  Notional, only when it is set
//
// A text is a tag and its bytes: 0, a uvarint length and the string; 1, a
// uvarint length and the bytes of a lowercase hex string; 2, the 16 bytes
// of a canonical UUID. The ClientOrderID is the bucket key. JSON always
// starts with '{', so the two forms never mix up.
const compactForm = 0x01

var states = []State{"", Pending, Unknown, Acknowledged, Rejected, NotPlaced}

// encodeRecord returns rec as the bbolt store writes it.
func encodeRecord(rec Record) ([]byte, error) {
	if rec.State.Open() {
		return json.Marshal(rec)
	}
	rec = compacted(rec)
	b := make([]byte, 0, 160)
	b = append(b, compactForm)
	for _, s := range []string{rec.Key, rec.Namespace, rec.AccountNumber, rec.Symbol, rec.Fingerprint, rec.OrderID, rec.Reason} {
		b = appendText(b, s)
	}
	code := byte(0)
	for i, s := range states {
		if i > 0 && s == rec.State {
			code = byte(i)
		}
	}
	b = append(b, code)
	if code == 0 {
		b = appendText(b, string(rec.State))
	}
	b = binary.AppendUvarint(b, uint64(max(rec.Sends, 0)))
	times := []time.Time{rec.CreatedAt, rec.FirstSentAt, rec.LastSignedAt, rec.UpdatedAt}
	var flags byte
	if rec.Answered2xx {
		flags |= 1
	}
	for i, t := range times {
		if !t.IsZero() {
			flags |= 2 << i
		}
	}
	b = append(b, flags)
	var base int64
	if !rec.CreatedAt.IsZero() {
		base = rec.CreatedAt.UnixNano()
	}
	for i, t := range times {
		switch {
		case t.IsZero():
		case i == 0:
			b = binary.AppendVarint(b, base)
		default:
			b = binary.AppendVarint(b, t.UnixNano()-base)
		}
	}
	if rec.Notional != "" {
		b = appendText(b, rec.Notional)
	}
	return b, nil
}

// decodeRecord decodes what encodeRecord wrote for client_order_id id.
func decodeRecord(id string, v []byte) (Record, error) {
	var rec Record
	if len(v) > 0 && v[0] == '{' {
		err := json.Unmarshal(v, &rec)
		return rec, err
	}
	d := decoder{b: v}
	if d.byte() != compactForm {
		return rec, fmt.Errorf("record %s: unknown encoding", id)
	}
	rec.ClientOrderID = id
	for _, s := range []*string{&rec.Key, &rec.Namespace, &rec.AccountNumber, &rec.Symbol, &rec.Fingerprint, &rec.OrderID, &rec.Reason} {
		*s = d.text()
	}
	if code := d.byte(); code == 0 {
		rec.State = State(d.text())
	} else if int(code) < len(states) {
		rec.State = states[code]
	} else {
		d.err = errors.New("bad state")
	}
	rec.Sends = int(d.uvarint())
	flags := d.byte()
	rec.Answered2xx = flags&1 != 0
	ns, present := d.times(flags)
	for i, t := range []*time.Time{&rec.CreatedAt, &rec.FirstSentAt, &rec.LastSignedAt, &rec.UpdatedAt} {
		if present[i] {
			*t = time.Unix(0, ns[i]).UTC()
		}
	}
	if d.err == nil && len(d.b) != 0 {
		rec.Notional = d.text()
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("trailing bytes")
	}
	if d.err != nil {
		return Record{}, fmt.Errorf("record %s: %w", id, d.err)
	}
	return rec, nil
}

// compactBefore reports whether v is a compact record (a settled one)
// whose LastSignedAt and UpdatedAt are both before since, read without
// decoding the rest; false when it is not, or cannot tell (v is JSON, or
// does not decode), so that v is decoded and judged whole.
func compactBefore(v []byte, since time.Time) bool {
	if len(v) == 0 || v[0] != compactForm {
		return false
	}
	d := decoder{b: v[1:]}
	for range 7 { // Key … Reason, as encodeRecord writes them
		d.skipText()
	}
	if d.byte() == 0 {
		d.skipText() // a state by name
	}
	d.uvarint() // Sends
	ns, present := d.times(d.byte())
	latest, seen := int64(0), false
	for i := 2; i < 4; i++ { // LastSignedAt, UpdatedAt
		if present[i] && (!seen || ns[i] > latest) {
			latest, seen = ns[i], true
		}
	}
	return d.err == nil && seen && time.Unix(0, latest).Before(since)
}

// times reads the times flags say a compact record holds, in Unix
// nanoseconds, and which it holds: CreatedAt, FirstSentAt, LastSignedAt,
// UpdatedAt, each after the first written as its offset from CreatedAt.
func (d *decoder) times(flags byte) (ns [4]int64, present [4]bool) {
	var base int64
	for i := range 4 {
		if flags&(2<<i) == 0 {
			continue
		}
		n := d.varint()
		if i == 0 {
			base = n
		} else {
			n += base
		}
		ns[i], present[i] = n, true
	}
	return ns, present
}

func appendText(b []byte, s string) []byte {
	if len(s) == 36 {
		if u, err := uuid.Parse(s); err == nil && u.String() == s {
			return append(append(b, 2), u[:]...)
		}
	}
	if len(s) > 0 && len(s)%2 == 0 {
		if raw, err := hex.DecodeString(s); err == nil && hex.EncodeToString(raw) == s {
			b = binary.AppendUvarint(append(b, 1), uint64(len(raw)))
			return append(b, raw...)
		}
	}
	b = binary.AppendUvarint(append(b, 0), uint64(len(s)))
	return append(b, s...)
}

// decoder reads a compact record; the first failure sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errors.New("cut short")
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes(n uint64) []byte {
	if uint64(len(d.b)) < n {
		d.fail()
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint) }

func (d *decoder) varint() int64 { return readVarint(d, binary.Varint) }

// readVarint reads one varint with read (binary.Uvarint or binary.Varint),
// failing d, and giving 0, when d's bytes do not start with one.
func readVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	n, k := read(d.b)
	if k <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return n
}

// skipText reads past one text as text reads it.
func (d *decoder) skipText() {
	switch d.byte() {
	case 0, 1:
		d.bytes(d.uvarint())
	case 2:
		d.bytes(16)
	default:
		if d.err == nil {
			d.err = errors.New("bad text tag")
		}
	}
}

func (d *decoder) text() string {
	switch d.byte() {
	case 0:
		return string(d.bytes(d.uvarint()))
	case 1:
		return hex.EncodeToString(d.bytes(d.uvarint()))
	case 2:
		u, err := uuid.FromBytes(d.bytes(16))
		if err != nil {
			d.fail()
			return ""
		}
		return u.String()
	}
	if d.err == nil {
		d.err = errors.New("bad text tag")
	}
	return ""
}
