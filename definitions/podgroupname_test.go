package definitions_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/workmap/workmap/definitions"
)

func TestPodGroupName(t *testing.T) {
	one := int32(1)
	long := strings.Repeat("a", 60)
	tests := map[string]struct {
		workload string
		group    definitions.Group
		want     string
	}{
		"workload scope":          {workload: "train", group: definitions.Group{Name: "all"}, want: "train-all"},
		"replica scope":           {workload: "lws", group: definitions.Group{Name: "group", Replica: &one}, want: "lws-group-1"},
		"instance scope":          {workload: "train", group: definitions.Group{Name: "job", Instance: "Workers"}, want: "train-job-workers"},
		"too long: hashed suffix": {workload: long, group: definitions.Group{Name: "all"}, want: long[:52] + "-"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.group.PodGroupName(tc.workload)
			require.True(t, strings.HasPrefix(got, tc.want), got)
			require.LessOrEqual(t, len(got), 63)
			require.Empty(t, validation.IsDNS1123Subdomain(got))
		})
	}
	a := definitions.Group{Name: "all"}.PodGroupName(long + "x")
	b := definitions.Group{Name: "all"}.PodGroupName(long + "y")
	require.NotEqual(t, a, b, "long names stay distinct")
	require.Equal(t, a, definitions.Group{Name: "all"}.PodGroupName(long+"x"), "deterministic")
}
