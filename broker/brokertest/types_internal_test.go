package brokertest

import (
	"reflect"
	"testing"
	"time"

	"github.com/tradewire/tradewire/internal/venue"
)

// TestTypesMirrorTheVenue keeps brokertest's own types field for field
// with the venue engine's, so the conversions at the boundary lose nothing.
func TestTypesMirrorTheVenue(t *testing.T) {
	pairs := []struct{ ours, theirs any }{
		{Fault{}, venue.Fault{}},
		{Mix{}, venue.Mix{}},
		{Hostile{}, venue.Hostile{}},
		{FaultPlan{}, venue.FaultPlan{}},
		{Request{}, venue.Request{}},
		{OrderRecord{}, venue.OrderRecord{}},
		{Counts{}, venue.Counts{}},
	}
	for _, p := range pairs {
		o, v := reflect.TypeOf(p.ours), reflect.TypeOf(p.theirs)
		t.Run(o.Name(), func(t *testing.T) {
			if o.NumField() != v.NumField() {
				t.Fatalf("%d fields, the venue's %s has %d", o.NumField(), v.Name(), v.NumField())
			}
			for i := range o.NumField() {
				of, vf := o.Field(i), v.Field(i)
				if of.Name != vf.Name || of.Type.Kind() != vf.Type.Kind() || of.Type.Name() != vf.Type.Name() || of.Tag != vf.Tag {
					t.Errorf("field %d: %s %s %q, the venue's: %s %s %q", i, of.Name, of.Type, of.Tag, vf.Name, vf.Type, vf.Tag)
				}
			}
		})
	}
}

func TestConstantsAreTheVenues(t *testing.T) {
	kinds := map[FaultKind]venue.FaultKind{
		FaultRespond: venue.FaultRespond, FaultLoseResponse: venue.FaultLoseResponse,
		FaultLatency: venue.FaultLatency, FaultRedirect: venue.FaultRedirect,
		FaultForeignNext: venue.FaultForeignNext, FaultTruncatedBody: venue.FaultTruncatedBody,
		FaultOtherOrderBody: venue.FaultOtherOrderBody, FaultWrongClientOrderID: venue.FaultWrongClientOrderID,
		FaultRefusedStream: venue.FaultRefusedStream, FaultProtocolError: venue.FaultProtocolError,
		FaultGoAway: venue.FaultGoAway,
	}
	for ours, theirs := range kinds {
		if string(ours) != string(theirs) {
			t.Errorf("%q is the venue's %q", ours, theirs)
		}
	}
	modes := map[DuplicateMode]venue.DuplicateMode{
		ReturnOriginal: venue.ReturnOriginal, Reject400: venue.Reject400, CreateSecond: venue.CreateSecond,
	}
	for ours, theirs := range modes {
		if string(ours) != string(theirs) {
			t.Errorf("%q is the venue's %q", ours, theirs)
		}
	}
}

func TestPlanRoundTrips(t *testing.T) {
	p := FaultPlan{
		Faults: []Fault{{Kind: FaultLatency, Method: "POST", Path: "/a/*", Times: 2, Status: 503,
			Header: map[string]string{"Retry-After": "1"}, Body: "b", Delay: time.Second, AfterCommit: true,
			Location: "https://x.example"}},
		Mix:       &Mix{Seed: 7, Rate429: 0.1, Rate5xx: 0.2, RateLost: 0.3, RateLatency: 0.4, Latency: time.Millisecond},
		Duplicate: CreateSecond,
		Hostile:   &Hostile{ClockOffset: -time.Minute, ListLag: time.Second, OmitClientOrderID: 0.5, DropNext: 1},
	}
	if got := planFromVenue(p.venue()); !reflect.DeepEqual(got, p) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
	}
	if got := planFromVenue(FaultPlan{}.venue()); !reflect.DeepEqual(got, FaultPlan{}) {
		t.Fatalf("zero plan round trip: %+v", got)
	}
}

func TestZeroLedgerIsEmpty(t *testing.T) {
	var l Ledger
	if l.Len() != 0 || l.Requests() != nil || l.Orders() != nil || l.Counts().Total != 0 {
		t.Fatal("zero Ledger is not empty")
	}
	l.Reset()
}
