package harness

import (
	"context"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CreatePriorityClasses creates PriorityClasses by name and value (preemptionPolicy: the
// default, PreemptLowerPriority).
func (c *Cluster) CreatePriorityClasses(ctx context.Context, values map[string]int32) {
	c.t.Helper()
	for name, value := range values {
		if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{}); err != nil {
			c.t.Fatalf("PriorityClass %s: %v", name, err)
		}
	}
}
