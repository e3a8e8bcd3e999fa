package orders

import (
	"time"

	"github.com/tradewire/tradewire/transport"
)

// The venue's clock, as this package sees it. These three are the only
// place package orders asks what time the venue thinks it is; everything
// else (expiry, lookup windows) derives from them in Placer.margin and
// Placer.lookbackFor.
//
// Today the transport does not measure the venue's clock: the venue's
// time is taken to be the local clock's, and the offset is reported as
// not measured, so every margin includes the whole maxClockOffset. When
// transport.Client gains ClockOffset, VenueNow and MaxClockOffset, these
// become one-line calls to them: venueNow returns tc.VenueNow(),
// clockOffset returns tc.ClockOffset(), and maxClockOffset is
// transport.MaxClockOffset.

// maxClockOffset bounds the offset between the local clock and the
// venue's that the transport accepts; it is what a margin allows for
// while the offset is not measured.
const maxClockOffset = 10 * time.Minute

// venueNow is the venue's time now: what the transport stamps signatures
// with, and so what the times a BeforeSend hook records are on.
func venueNow(tc *transport.Client) time.Time { return tc.Clock().Now() }

// clockOffset is the venue's clock minus the local clock, and whether it
// has been measured.
func clockOffset(tc *transport.Client) (time.Duration, bool) { return 0, false }
