package bench

import (
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/e2e/harness"
)

// OtherScheduler is a third scheduler put beside A and B in the same alternating runs: any
// kube-scheduler-compatible binary with a KubeSchedulerConfiguration of the user's.
type OtherScheduler struct {
	// Binary is the scheduler binary; Config the configuration's content (the bench replaces
	// its clientConnection and turns leader election off, as for A and B).
	Binary string `json:"binary"`
	Config []byte `json:"-"`
	// ConfigPath is where Config was read from (for the report).
	ConfigPath string `json:"config"`
	// Name is the profile's schedulerName, which its pods ask for.
	Name string `json:"name"`
	// PodGroups: its pods carry the scheduling.x-k8s.io/pod-group label from creation and
	// each gang gets a scheduling.x-k8s.io/v1alpha1 PodGroup (minMember = gang size) before
	// its pods, as scheduler-plugins' Coscheduling expects.
	PodGroups bool `json:"pod_groups"`
}

// LoadOtherScheduler reads the other scheduler's configuration and checks it has a profile
// named name; with name empty, the first profile's schedulerName is taken.
func LoadOtherScheduler(binary, configPath, name string, podGroups bool) (*OtherScheduler, error) {
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("other scheduler: %w", err)
	}
	abs, err := filepath.Abs(binary)
	if err != nil {
		return nil, err
	}
	if configPath == "" {
		return nil, fmt.Errorf("other scheduler: a configuration file is needed (-other-scheduler-config)")
	}
	data, err := os.ReadFile(configPath)
	if err != nil {
		return nil, fmt.Errorf("other scheduler: %w", err)
	}
	name, err = profileName(data, name)
	if err != nil {
		return nil, fmt.Errorf("other scheduler: %s: %w", configPath, err)
	}
	return &OtherScheduler{Binary: abs, Config: data, ConfigPath: configPath, Name: name, PodGroups: podGroups}, nil
}

// profileName returns want when a profile of the KubeSchedulerConfiguration has that
// schedulerName, or the first profile's when want is empty.
func profileName(config []byte, want string) (string, error) {
	var cfg struct {
		Kind     string `json:"kind"`
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		return "", err
	}
	if cfg.Kind != "KubeSchedulerConfiguration" {
		return "", fmt.Errorf("kind %q, want KubeSchedulerConfiguration", cfg.Kind)
	}
	var names []string
	for _, p := range cfg.Profiles {
		if p.SchedulerName != "" {
			names = append(names, p.SchedulerName)
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("no profile with a schedulerName (the pods must ask for one that neither A nor B serves)")
	}
	if want == "" {
		want = names[0]
	}
	found := false
	for _, n := range names {
		found = found || n == want
	}
	switch {
	case !found:
		return "", fmt.Errorf("no profile %q (profiles: %v)", want, names)
	case want == corev1.DefaultSchedulerName || want == harness.SchedulerName:
		return "", fmt.Errorf("profile %q is A's or B's: give the other scheduler a name of its own", want)
	}
	return want, nil
}
