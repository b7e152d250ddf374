package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ResidentMemory is what a process's resident memory holds, as Linux counts it
// (/proc/PID/status), in bytes: Anon is memory the process allocated (its heap, stacks and
// runtime structures, all that can leak); File is pages of files it mapped, its binary's code
// and read-only data among them, which grow as code runs for the first time and cannot leak.
type ResidentMemory struct {
	Anon, File float64
}

// residentMemory reads the resident memory of the process pid.
func residentMemory(pid int) (ResidentMemory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ResidentMemory{}, err
	}
	return parseResidentMemory(data)
}

// parseResidentMemory reads RssAnon and RssFile from the text of /proc/PID/status.
func parseResidentMemory(status []byte) (ResidentMemory, error) {
	var m ResidentMemory
	found := map[string]*float64{"RssAnon:": &m.Anon, "RssFile:": &m.File}
	seen := 0
	for sc := bufio.NewScanner(bytes.NewReader(status)); sc.Scan(); {
		fields := strings.Fields(sc.Text()) // "RssAnon:   123456 kB"
		if len(fields) != 3 || found[fields[0]] == nil || fields[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return ResidentMemory{}, fmt.Errorf("%s %q: %w", fields[0], fields[1], err)
		}
		*found[fields[0]] = kb * 1024
		seen++
	}
	if seen != len(found) {
		return ResidentMemory{}, fmt.Errorf("no RssAnon and RssFile lines in the process status")
	}
	return m, nil
}

// ResidentMemory reads what the scheduler process's resident memory holds.
func (s *WorkmapScheduler) ResidentMemory() (ResidentMemory, error) {
	return residentMemory(s.p.cmd.Process.Pid)
}

// ResidentMemory reads what the running webhook process's resident memory holds.
func (w *WorkmapWebhook) ResidentMemory() (ResidentMemory, error) {
	if w.p == nil {
		return ResidentMemory{}, fmt.Errorf("workmap-webhook is not running")
	}
	return residentMemory(w.p.cmd.Process.Pid)
}
