package venue

import "time"

// timesInForce are the time_in_force values the vendor's spec enumerates
// (components.requestParameters.TimeInForce) for limit, stop_loss and
// stop_limit orders; market orders take none.
var timesInForce = map[string]bool{"gtc": true, "gfd": true, "gfw": true, "gfm": true}

// expiry returns the instant an order with time in force tif, created at
// created on the venue's clock, stops being good; zero for gtc (or none).
//
// The vendor says only that gfd, gfw and gfm orders remain open "until the
// end of the day", "of the week" and "of the month". It names no time
// zone, so the venue uses UTC calendar boundaries:
//
//   - gfd: the next 00:00:00 UTC after created (the end of created's UTC day);
//   - gfw: the next Monday 00:00:00 UTC after created (weeks run Monday to
//     Sunday, as in ISO 8601);
//   - gfm: 00:00:00 UTC on the first day of the month after created's.
//
// The boundary belongs to the next period: an order created at exactly
// 00:00 UTC is good for that whole day. At the expiry instant the order is
// no longer open: it does not fill then, and it ends canceled with
// updated_at at the expiry, keeping any fills it had.
func expiry(tif string, created time.Time) time.Time {
	u := created.UTC()
	y, m, d := u.Date()
	switch tif {
	case "gfd":
		return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	case "gfw":
		sinceMonday := (int(u.Weekday()) + 6) % 7
		return time.Date(y, m, d+7-sinceMonday, 0, 0, 0, 0, time.UTC)
	case "gfm":
		return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// timeInForce is the order's time in force as the venue prints it.
func (o *order) timeInForce() string {
	if o.tif == "" {
		return "gtc"
	}
	return o.tif
}
