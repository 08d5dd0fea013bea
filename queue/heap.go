package queue

import (
	"container/heap"
	"time"
)

// entry is a message not yet acknowledged.
type entry struct {
	id         uint64
	body       []byte
	seg        uint64    // the segment that holds its put
	state      int       // ready, leased or acking
	deadline   time.Time // leased: when it is delivered again
	lease      uint64    // bumped at each delivery: a transaction's claim
	deliveries int
	readyIdx   int
	leaseIdx   int
}

const (
	ready = iota
	leased
	acking // an acknowledgement is being made durable
)

// byID is the ready messages, oldest (smallest id) first.
type byID []*entry

func (h byID) Len() int           { return len(h) }
func (h byID) Less(i, j int) bool { return h[i].id < h[j].id }
func (h byID) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].readyIdx, h[j].readyIdx = i, j
}
func (h *byID) Push(x any) { e := x.(*entry); e.readyIdx = len(*h); *h = append(*h, e) }
func (h *byID) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.readyIdx = -1
	return e
}

// byDeadline is the leased messages, the first to expire first.
type byDeadline []*entry

func (h byDeadline) Len() int           { return len(h) }
func (h byDeadline) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h byDeadline) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].leaseIdx, h[j].leaseIdx = i, j
}
func (h *byDeadline) Push(x any) { e := x.(*entry); e.leaseIdx = len(*h); *h = append(*h, e) }
func (h *byDeadline) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.leaseIdx = -1
	return e
}

var (
	_ heap.Interface = (*byID)(nil)
	_ heap.Interface = (*byDeadline)(nil)
)
