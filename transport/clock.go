package transport

import (
	"net/http"
	"slices"
	"sync"
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
	mu      sync.Mutex
	samples []time.Duration // the last clockSamples good samples, oldest first
	offset  time.Duration   // the applied estimate
	logged  time.Duration   // the estimate last logged
}

// dateSample returns the offset one answer's Date header shows, given the
// local time the answer arrived: Date is the venue's clock truncated to the
// second at some instant before the answer arrived, so the venue's clock at
// arrival was, at best guess, Date + 0.5 s. ok is false when the header is
// missing or not an HTTP date.
func dateSample(header http.Header, received time.Time) (time.Duration, bool) {
	v := header.Get("Date")
	if v == "" {
		return 0, false
	}
	date, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return date.Add(clockResolution / 2).Sub(received), true
}

// observe records one sample and returns the estimate before and after it.
// A sample further off than MaxClockOffset is ignored.
func (s *clockSkew) observe(sample time.Duration) (before, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before = s.offset
	if sample > MaxClockOffset || sample < -MaxClockOffset {
		return before, before
	}
	s.samples = append(s.samples, sample)
	if len(s.samples) > clockSamples {
		s.samples = s.samples[1:]
	}
	s.offset = estimate(s.samples)
	return before, s.offset
}

// estimate is the median of samples (the mean of the middle two for an even
// count), or zero when it is within the Date header's resolution.
func estimate(samples []time.Duration) time.Duration {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	n := len(sorted)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset, len(s.samples) > 0
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
// signatures are stamped with, and the time BeforeSend receives.
func (c *Client) VenueNow() time.Time {
	offset, _ := c.skew.get()
	return c.clock.Now().Add(offset)
}

// learnClock takes one answer's Date header as a sample and logs the
// estimate when it moves by a second or more. It returns the raw sample,
// bounded or not, for the 401 diagnosis.
func (c *Client) learnClock(header http.Header, received time.Time) (time.Duration, bool) {
	sample, ok := dateSample(header, received)
	if !ok {
		return 0, false
	}
	before, after := c.skew.observe(sample)
	if after != before && c.skew.shouldLog(after) {
		c.log.Info().Dur("clock_offset", after).Dur("previous", before).
			Msg("venue clock offset changed; signing with the corrected time")
	} else if sample > MaxClockOffset || sample < -MaxClockOffset {
		c.log.Debug().Dur("sample", sample).Dur("max", MaxClockOffset).Msg("ignored a Date header too far from this machine's clock")
	}
	return sample, true
}
