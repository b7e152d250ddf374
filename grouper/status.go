package grouper

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// PodGroupIndex indexes pods by "<namespace>/<pod-group label>".
const PodGroupIndex = "workmap.dev/pod-group"

// PodGroupKey returns the index key of a pod's PodGroup ("" for a pod with none).
func PodGroupKey(pod *corev1.Pod) string {
	name := pod.Labels[v1alpha1.PodGroupLabel]
	if name == "" {
		return ""
	}
	return GroupKey(pod.Namespace, name)
}

// GroupKey is the key of the PodGroup name in namespace, as PodGroupIndex and caches use it.
func GroupKey(namespace, name string) string { return namespace + "/" + name }

// IndexByPodGroup is an informer index function for PodGroupKey.
func IndexByPodGroup(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if key := PodGroupKey(pod); key != "" {
		return []string{key}, nil
	}
	return nil, nil
}

// GroupStatus computes a PodGroup's status from its pods, the way scheduler-plugins reports
// it: counts of scheduled (bound), running, succeeded and failed pods, and a phase.
func GroupStatus(minMember int32, pods []*corev1.Pod, previous v1alpha1.PodGroupStatus) v1alpha1.PodGroupStatus {
	s := v1alpha1.PodGroupStatus{OccupiedBy: previous.OccupiedBy, ScheduleStartTime: previous.ScheduleStartTime}
	waiting := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			s.Scheduled++
		} else if p.DeletionTimestamp == nil {
			waiting++
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			s.Running++
		case corev1.PodSucceeded:
			s.Succeeded++
		case corev1.PodFailed:
			s.Failed++
		}
	}
	switch {
	case minMember > 0 && s.Succeeded >= minMember:
		s.Phase = v1alpha1.PodGroupFinished
	case s.Failed > 0 && s.Running+s.Succeeded < minMember && waiting == 0:
		s.Phase = v1alpha1.PodGroupFailed
	case s.Running+s.Succeeded >= minMember && s.Running > 0:
		s.Phase = v1alpha1.PodGroupRunning
	case s.Scheduled >= minMember && s.Scheduled > 0:
		s.Phase = v1alpha1.PodGroupScheduled
	case s.Scheduled > 0:
		s.Phase = v1alpha1.PodGroupScheduling
	default:
		s.Phase = v1alpha1.PodGroupPending
	}
	return s
}

// syncStatus brings one PodGroup's status up to date with its pods.
func (c *Controller) syncStatus(ctx context.Context, key types.NamespacedName) error {
	obj, exists, err := c.podGroups.GetIndexer().GetByKey(key.String())
	if err != nil || !exists {
		return err
	}
	current, ok := obj.(*v1alpha1.PodGroup)
	if !ok {
		return fmt.Errorf("PodGroup %s: unexpected cached type %T", key, obj)
	}
	items, err := c.podIndexer.ByIndex(PodGroupIndex, key.String())
	if err != nil {
		return err
	}
	pods := make([]*corev1.Pod, 0, len(items))
	for _, item := range items {
		if p, ok := item.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	status := GroupStatus(current.Spec.MinMember, pods, current.Status)
	if status.Scheduled > 0 && status.ScheduleStartTime.IsZero() {
		status.ScheduleStartTime = metav1.Now()
	}
	if apiequality.Semantic.DeepEqual(status, current.Status) {
		return nil
	}
	updated := current.DeepCopy()
	updated.Status = status
	err = c.groups.Status().Patch(ctx, updated, client.MergeFrom(current))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
