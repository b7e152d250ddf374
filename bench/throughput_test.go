package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSchedulerLetters(t *testing.T) {
	for s, want := range map[Scheduler]string{Plain: "A", Gang: "B", Other: "O"} {
		assert.Equal(t, want, s.Letter())
	}
	o := ThroughputOptions{Other: &OtherScheduler{Name: "coscheduling"}}
	assert.Equal(t, []Scheduler{Plain, Gang}, ThroughputOptions{}.schedulers())
	for s, want := range map[Scheduler]string{Plain: "default-scheduler", Gang: "workmap-scheduler", Other: "coscheduling"} {
		assert.Equal(t, want, o.schedulerName(s))
	}
}
