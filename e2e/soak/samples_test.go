//go:build soak

package soak

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// samplesFile is the file, in the profiles directory, that holds every sample of every
// process: the curve behind the report's two points, to see where a growth starts and
// whether it levels off.
const samplesFile = "samples.csv"

// writeSamples writes every sample of lives to dir/samplesFile, one row each, memory in MiB
// and time in seconds from start.
func writeSamples(dir string, lives []*life, start time.Time) error {
	f, err := os.Create(filepath.Join(dir, samplesFile))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"process", "seconds", "leads", "resident", "free_heap", "in_use", "live_heap", "event_libraries",
		"rss_anon", "rss_file", "heap_spans", "stacks", "runtime", "goroutines"})
	mib := func(v float64) string { return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) }
	for _, l := range lives {
		for _, s := range l.samples {
			_ = w.Write([]string{l.name, strconv.FormatFloat(s.at.Sub(start).Seconds(), 'f', 0, 64), strconv.FormatBool(s.leads),
				mib(s.rss), mib(s.freeHeap), mib(s.inUse()), mib(s.heap), mib(s.events),
				mib(s.anon), mib(s.file), mib(s.heapSpans), mib(s.stacks), mib(s.runtime), strconv.FormatFloat(s.goroutines, 'f', 0, 64)})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
