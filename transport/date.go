package transport

import "time"

// Date returns the venue's clock as the answer's Date header shows it (to
// the second, so the venue's clock had reached it when it answered), and
// false when the answer had none.
func (r *Response) Date() (time.Time, bool) {
	if r == nil {
		return time.Time{}, false
	}
	return parseDate(headerDate(r.Header))
}
