package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompleteKinds(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"tree completes kinds followed by a slash":  {args: []string{"__complete", "tree", "ray"}, want: "raycluster/\nrayjob/\nrayservice/\n:6\n"},
		"get completes kinds":                       {args: []string{"__complete", "get", "leader"}, want: "leaderworkerset\n:4\n"},
		"one argument only":                         {args: []string{"__complete", "tree", "jobset/x", ""}, want: ":4\n"},
		"Kubernetes' own kinds the scheduler gangs": {args: []string{"__complete", "tree", "jo"}, want: "job/\njobset/\n:6\n"},
		"a pod, beside the kinds named alike":       {args: []string{"__complete", "get", "pod"}, want: "pod\npodcliqueset\n:4\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, tc.args...)
			require.NoError(t, err)
			require.Equal(t, tc.want, out)
		})
	}
}
