package bench

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where the numbers were measured.
type Machine struct {
	CPU      string  `json:"cpu"`
	Cores    int     `json:"cores"`
	MemoryGB float64 `json:"memory_gb"`
	OS       string  `json:"os"`
	// LoadBefore and LoadAfter are the 1-minute load averages when the run started and ended:
	// other work on a shared machine shows here.
	LoadBefore float64 `json:"load_before"`
	LoadAfter  float64 `json:"load_after"`
}

// Versions are the versions of what was measured.
type Versions struct {
	Go         string `json:"go"`
	Kubernetes string `json:"kubernetes"` // the API server's
	// Kubernetes137 is the API server of the native137 step's control plane.
	Kubernetes137 string `json:"kubernetes_137,omitempty"`
	KubeScheduler string `json:"kube_scheduler"` // the plain kube-scheduler binary's
	Workmap       string `json:"workmap"`        // git commit of this checkout
	Kwok          string `json:"kwok"`
	JobSet        string `json:"jobset"`
	Other         string `json:"other,omitempty"` // the other scheduler binary's (O)
}

// ReadMachine reads the CPU model and cores from /proc/cpuinfo and the memory from
// /proc/meminfo (Linux); elsewhere the fields it cannot read stay empty.
func ReadMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, LoadBefore: LoadAverage()}
	cores := 0
	forEachLine("/proc/cpuinfo", func(k, v string) {
		switch k {
		case "model name":
			if m.CPU == "" {
				m.CPU = v
			}
		case "processor":
			cores++
		}
	})
	if cores > 0 {
		m.Cores = cores
	}
	forEachLine("/proc/meminfo", func(k, v string) {
		if k == "MemTotal" {
			kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			m.MemoryGB = round(kb/1024/1024, 1)
		}
	})
	return m
}

// LoadAverage is the 1-minute load average (0 when unknown).
func LoadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	l, _ := strconv.ParseFloat(f[0], 64)
	return l
}

func forEachLine(path string, fn func(key, value string)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok {
			fn(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
}

// GitCommit describes the checkout at root ("abc1234", "+dirty" when it has changes). The
// files in outputs (the bench's own results, paths relative to root) are left out of that
// check, so that a run after a run on the same clean commit is not called dirty.
func GitCommit(root string, outputs ...string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	args := []string{"-C", root, "status", "--porcelain", "--untracked-files=no", "--", "."}
	for _, o := range outputs {
		args = append(args, ":(exclude)"+filepath.ToSlash(o))
	}
	if st, err := exec.Command("git", args...).Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		commit += "+dirty"
	}
	return commit
}

var pinRE = regexp.MustCompile(`^([A-Z_]+_VERSION)\s*:?=\s*(\S+)`)

// PinnedVersions reads the VAR_VERSION pins of hack/versions.mk.
func PinnedVersions(path string) map[string]string {
	out := map[string]string{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		if m := pinRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			out[m[1]] = m[2]
		}
	}
	return out
}

// BinaryVersion runs `binary --version` and returns its first line.
func BinaryVersion(binary string) string {
	out, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
