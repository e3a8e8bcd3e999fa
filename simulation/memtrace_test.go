package simulation

import (
	"bufio"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memTrace samples the process's memory once a second while the matrix
// runs, for finding where its peak comes from: VmRSS and VmHWM from
// /proc/self/status, the Go runtime's own classes (runtime/metrics) and
// the runs in flight. TestMatrix starts one when TRADEWIRE_SIM_MEMTRACE
// names a file; the samples go there as tab-separated lines, and each time
// the live heap reaches a new peak (10 % over the last one written) a heap
// profile goes to the same name + ".heap". It measures; it checks nothing.
// The zero value and a nil *memTrace do nothing.
type memTrace struct {
	mu       sync.Mutex
	inFlight map[string]int
	out      *bufio.Writer
	file     *os.File
	path     string
	peakLive uint64
	profiles int
	stop     chan struct{}
	done     chan struct{}
}

// memTraceMetrics are the runtime/metrics a sample records, in column order.
var memTraceMetrics = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/gc/gogc:percent",
	"/gc/gomemlimit:bytes",
	"/sched/goroutines:goroutines",
	"/gc/cycles/total:gc-cycles",
}

// startMemTrace starts sampling into path every interval; "" starts
// nothing and returns nil.
func startMemTrace(path string, interval time.Duration) (*memTrace, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	m := &memTrace{inFlight: map[string]int{}, out: bufio.NewWriter(f), file: f, path: path,
		stop: make(chan struct{}), done: make(chan struct{})}
	cols := []string{"wall_s", "vmrss_kb", "vmhwm_kb"}
	for _, name := range memTraceMetrics {
		n, _, _ := strings.Cut(name, ":")
		cols = append(cols, n)
	}
	fmt.Fprintln(m.out, strings.Join(append(cols, "in_flight"), "\t"))
	start := time.Now()
	go func() {
		defer close(m.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			m.sample(time.Since(start))
			select {
			case <-m.stop:
				m.sample(time.Since(start))
				return
			case <-tick.C:
			}
		}
	}()
	return m, nil
}

// enter and leave mark a run in flight.
func (m *memTrace) enter(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.inFlight[name]++
	m.mu.Unlock()
}

func (m *memTrace) leave(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.inFlight[name]--; m.inFlight[name] <= 0 {
		delete(m.inFlight, name)
	}
	m.mu.Unlock()
}

func (m *memTrace) sample(at time.Duration) {
	samples := make([]metrics.Sample, len(memTraceMetrics))
	for i, name := range memTraceMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	rss, hwm := procStatus("VmRSS:"), procStatus("VmHWM:")
	m.mu.Lock()
	defer m.mu.Unlock()
	row := []string{strconv.FormatFloat(at.Seconds(), 'f', 0, 64), rss, hwm}
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			row = append(row, strconv.FormatUint(s.Value.Uint64(), 10))
		case metrics.KindFloat64:
			row = append(row, strconv.FormatFloat(s.Value.Float64(), 'f', 0, 64))
		default:
			row = append(row, "-")
		}
	}
	var names []string
	for n := range m.inFlight {
		names = append(names, n)
	}
	slices.Sort(names)
	row = append(row, strings.Join(names, ","))
	fmt.Fprintln(m.out, strings.Join(row, "\t"))
	if live := samples[0].Value.Uint64(); live > m.peakLive+m.peakLive/10 {
		m.peakLive = live
		m.profiles++
		if f, err := os.Create(fmt.Sprintf("%s.heap%d", m.path, m.profiles)); err == nil {
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
}

// close stops the sampler and flushes what it wrote.
func (m *memTrace) close() error {
	if m == nil {
		return nil
	}
	close(m.stop)
	<-m.done
	if err := m.out.Flush(); err != nil {
		m.file.Close()
		return err
	}
	return m.file.Close()
}

// procStatus is the value of a line of /proc/self/status, in kB, or "-".
func procStatus(prefix string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "-"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSuffix(strings.TrimSpace(v), " kB")
		}
	}
	return "-"
}
