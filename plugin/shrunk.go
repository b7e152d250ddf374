package plugin

import (
	"context"
	"time"

	fwk "k8s.io/kube-scheduler/framework"
)

// admitShrunkEvery is how often gangs waiting at Permit are checked for a minMember that fell.
const admitShrunkEvery = time.Second

// admitShrunk admits the gangs waiting at Permit that are complete now: their minMember fell
// (the workload was scaled down, or an operator lowered its PodGroup's) while their pods
// waited for more members that will not come. Permit admits a gang only when one of its pods
// arrives, so without this they would wait out their timeout.
func (g *Gang) admitShrunk(context.Context) {
	var complete []string
	seen := map[string]bool{}
	g.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		group, ok := g.members.GroupOf(wp.GetPod().UID)
		if ok && !seen[group.Key] {
			seen[group.Key] = true
			if group.Known && completeGang(group) {
				complete = append(complete, group.Key)
			}
		}
	})
	// Outside the iteration, which holds the waiting pods' lock that admitting takes.
	for _, key := range complete {
		g.admit(key)
	}
}
