package definitions

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// maxNameLength is the longest PodGroup name: a DNS label, so it can also be a label value.
const maxNameLength = 63

// PodGroupName is the deterministic name of the PodGroup a group becomes for a workload:
// <workload>-<group>[-<instance>][-<replica>]. Names longer than 63 characters keep a prefix and
// end in a hash of the full name, so they stay valid and distinct.
func (g Group) PodGroupName(workload string) string {
	parts := []string{workload, g.Name}
	if g.Instance != "" {
		parts = append(parts, strings.ToLower(g.Instance))
	}
	if g.Replica != nil {
		parts = append(parts, strconv.Itoa(int(*g.Replica)))
	}
	name := strings.Join(parts, "-")
	if len(name) <= maxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:10]
	prefix := strings.TrimRight(name[:maxNameLength-len(suffix)-1], "-.")
	return prefix + "-" + suffix
}
