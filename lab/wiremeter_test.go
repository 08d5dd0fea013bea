package lab

import (
	"testing"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/wire"
)

// The meter counts every message's encoded bytes, the ones it does not
// encode again (the same message as the last) as well as the others: equal
// values boxed apart, nil and empty digests, a message sent twice in a row
// and again after another.
func TestWireMeterCountsEveryMessage(t *testing.T) {
	a := epidemic.Algorithms[2] // push-pull
	codec, err := wire.NewCodec(a.Messages)
	if err != nil {
		t.Fatal(err)
	}
	one := epidemic.Digest{Digest: []epidemic.Sum{{Key: "x", Version: 1 << 32}}}
	var boxed proc.Message = one
	msgs := []proc.Message{
		epidemic.Digest{}, epidemic.Digest{}, epidemic.Digest{Digest: []epidemic.Sum{}},
		boxed, boxed, one, epidemic.Digest{Digest: []epidemic.Sum{{Key: "xyz", Version: 2 << 32}}},
		epidemic.Update{Entries: []epidemic.Entry{{Key: "x", Value: "v1", Version: 1 << 32}}},
		boxed, epidemic.Digest{},
	}
	m := &wireMeter{codec: codec}
	var want int64
	for _, msg := range msgs {
		b, err := codec.Append(nil, msg)
		if err != nil {
			t.Fatal(err)
		}
		want += int64(len(b))
		m.sent(msg)
	}
	if a.Name != "push-pull" || m.bytes != want {
		t.Errorf("%s: the meter counted %d bytes, the messages encode to %d", a.Name, m.bytes, want)
	}
}
