package transport

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxClockOffset bounds the offset the client applies; a Date header further
// off is ignored as a bad sample.
//
// Ten minutes is far more than a venue or a synchronised machine drifts, and
// more than a machine whose NTP has been off for days; a Date further off
// than that is far likelier to be a cached or broken answer (a proxy's stale
// Date) than the venue's clock. It also bounds how far the corrected time,
// and the windows derived from the offset (package orders' lookup window),
// can be moved by answers the venue controls. A clock that far off is
// reported (see StatusError.ClockOffset) for a person to fix, not masked.
const MaxClockOffset = 10 * time.Minute

// clockResolution is the Date header's resolution. An estimate smaller than
// this cannot be told from no offset at all and is not applied.
const clockResolution = time.Second

// clockSamples is how many recent samples the estimate is the median of.
const clockSamples = 5

// clockSkew estimates the venue's clock minus the local clock from the Date
// headers of the venue's answers. It is safe for concurrent use.
type clockSkew struct {
	mu sync.Mutex
	// samples holds the last n good samples (n at most clockSamples), in
	// no order; next is where the next one goes, over the oldest.
	samples [clockSamples]time.Duration
	n, next int
	offset  time.Duration // the applied estimate
	logged  time.Duration // the estimate last logged
	// applied and seen are offset and n > 0, for get to read without the
	// lock on every attempt; both are written under it.
	applied atomic.Int64
	seen    atomic.Bool
	// lastDate is the last Date header parsed and date what it said: the
	// venue's answers within a second carry the same one.
	lastDate string
	date     time.Time
}

// dateSample returns the offset one answer's Date header shows, given the
// local time the answer arrived: Date is the venue's clock truncated to the
// second at some instant before the answer arrived, so the venue's clock at
// arrival was, at best guess, Date + 0.5 s. ok is false when the header is
// missing or not an HTTP date.
func dateSample(header http.Header, received time.Time) (time.Duration, bool) {
	date, ok := parseDate(headerDate(header))
	if !ok {
		return 0, false
	}
	return sampleAt(date, received), true
}

// headerDate is header's Date, as Header.Get("Date") returns it: net/http
// keys an answer's headers in canonical form, as "Date" is.
func headerDate(header http.Header) string {
	if v := header["Date"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// sampleAt is the offset a Date of date shows for an answer received then.
func sampleAt(date, received time.Time) time.Duration {
	return date.Add(clockResolution / 2).Sub(received)
}

// parseDate parses a Date header's value; ok is false when it is empty
// or not an HTTP date.
func parseDate(v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	if date, ok := parseIMFFixdate(v); ok {
		return date, true
	}
	date, err := http.ParseTime(v)
	return date, err == nil
}

// parseIMFFixdate parses the one form of HTTP date a server sends (RFC 9110
// IMF-fixdate, http.TimeFormat, "Sun, 06 Nov 1994 08:49:37 GMT"), spelled
// exactly so, at a fraction of the cost of time.Parse. ok is false for
// anything else, which http.ParseTime then reads as it would have: every
// date this accepts, http.ParseTime reads as the same instant.
func parseIMFFixdate(v string) (time.Time, bool) {
	if len(v) != len(http.TimeFormat) || v[3] != ',' || v[4] != ' ' || v[7] != ' ' || v[11] != ' ' ||
		v[16] != ' ' || v[19] != ':' || v[22] != ':' || v[25:] != " GMT" {
		return time.Time{}, false
	}
	if d := strings.Index("SunMonTueWedThuFriSat", v[:3]); d < 0 || d%3 != 0 {
		return time.Time{}, false
	}
	m := strings.Index("JanFebMarAprMayJunJulAugSepOctNovDec", v[8:11])
	if m < 0 || m%3 != 0 {
		return time.Time{}, false
	}
	day, ok1 := digits(v[5:7])
	year, ok2 := digits(v[12:16])
	hour, ok3 := digits(v[17:19])
	minute, ok4 := digits(v[20:22])
	sec, ok5 := digits(v[23:25])
	month := time.Month(m/3 + 1)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || hour > 23 || minute > 59 || sec > 59 ||
		day < 1 || day > daysIn(month, year) {
		return time.Time{}, false
	}
	return time.Date(year, month, day, hour, minute, sec, 0, time.UTC), true
}

// digits parses s, ASCII digits only.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// daysIn is the number of days in month of year.
func daysIn(month time.Month, year int) int {
	return time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// observe records one sample and returns the estimate before and after it.
// A sample further off than MaxClockOffset is ignored.
func (s *clockSkew) observe(sample time.Duration) (before, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.observeLocked(sample)
}

// observeDate is dateSample and observe in one: it takes the sample a Date
// header's value v shows for an answer received then and records it. ok is
// false, and nothing is recorded, when v is empty or not an HTTP date. The
// last value parsed is kept, so answers in the same second parse none.
func (s *clockSkew) observeDate(v string, received time.Time) (sample, before, after time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	date := s.date
	if v != s.lastDate || v == "" {
		if date, ok = parseDate(v); !ok {
			return 0, 0, 0, false
		}
		s.lastDate, s.date = v, date
	}
	sample = sampleAt(date, received)
	before, after = s.observeLocked(sample)
	return sample, before, after, true
}

func (s *clockSkew) observeLocked(sample time.Duration) (before, after time.Duration) {
	before = s.offset
	if sample > MaxClockOffset || sample < -MaxClockOffset {
		return before, before
	}
	s.samples[s.next] = sample
	s.next = (s.next + 1) % clockSamples
	s.n = min(s.n+1, clockSamples)
	s.offset = estimate(s.samples, s.n)
	s.applied.Store(int64(s.offset))
	s.seen.Store(true)
	return before, s.offset
}

// restart drops every sample but this one, which becomes the estimate: a
// 401 showed the old samples describe a clock that has since been stepped.
// A sample further off than MaxClockOffset is ignored.
func (s *clockSkew) restart(sample time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sample > MaxClockOffset || sample < -MaxClockOffset {
		return
	}
	s.n, s.next = 0, 0
	s.observeLocked(sample)
}

// estimate is the median of the first n of samples (the mean of the
// middle two for an even count), or zero when it is within the Date
// header's resolution.
func estimate(samples [clockSamples]time.Duration, n int) time.Duration {
	sorted := samples[:n]
	slices.Sort(sorted)
	m := sorted[n/2]
	if n%2 == 0 {
		m = sorted[n/2-1] + (sorted[n/2]-sorted[n/2-1])/2
	}
	if m > -clockResolution && m < clockResolution {
		return 0
	}
	return m
}

// get returns the estimate and whether any good sample was seen.
func (s *clockSkew) get() (time.Duration, bool) {
	return time.Duration(s.applied.Load()), s.seen.Load()
}

// shouldLog reports whether the estimate moved by a second or more since it
// was last logged, and records it as logged.
func (s *clockSkew) shouldLog(offset time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := offset - s.logged
	if d > -clockResolution && d < clockResolution {
		return false
	}
	s.logged = offset
	return true
}

// ClockOffset returns the measured offset of the venue's clock from the
// client's clock (venue minus local), learned from the Date headers of the
// venue's answers, and whether any answer has been measured.
//
// The offset is the median of the last 5 answers' samples, each taken as
// Date + 0.5 s minus the local time the answer arrived (Date has a
// resolution of one second). A sample further off than MaxClockOffset is
// ignored, and an offset under one second is reported, and applied, as 0:
// the header cannot tell it from none. Answers without a valid Date are
// not samples.
func (c *Client) ClockOffset() (time.Duration, bool) { return c.skew.get() }

// VenueNow returns the client's clock corrected by ClockOffset: the time
// signatures are stamped with, and the time Send's beforeSend receives.
func (c *Client) VenueNow() time.Time {
	offset, _ := c.skew.get()
	return c.clock.Now().Add(offset)
}

// learnClock takes one answer's Date header as a sample and logs the
// estimate when it moves by a second or more. It returns the raw sample,
// bounded or not, for the 401 diagnosis.
func (c *Client) learnClock(header http.Header, received time.Time) (time.Duration, bool) {
	sample, before, after, ok := c.skew.observeDate(headerDate(header), received)
	if !ok {
		return 0, false
	}
	if after != before && c.skew.shouldLog(after) {
		c.log.Info().Dur("clock_offset", after).Dur("previous", before).
			Msg("venue clock offset changed; signing with the corrected time")
	} else if sample > MaxClockOffset || sample < -MaxClockOffset {
		c.log.Debug().Dur("sample", sample).Dur("max", MaxClockOffset).Msg("ignored a Date header too far from this machine's clock")
	}
	return sample, true
}
