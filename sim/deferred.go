package sim

import (
	"encoding/json"
	"reflect"

	"github.com/cohort-go/cohort/trace"
)

// A DeferringSink is a trace sink that takes an input's or an output's
// value instead of its JSON (Event.Data), to encode it (EncodeData) only
// if the event is read: a model checker records far more events than it
// reads. RecordDeferred is handed the event with Data nil, and whether
// the value is plain: of a type with nothing behind a reference but
// strings, so that it cannot change once recorded. A value that is not
// plain may share memory with the process's state, which its next steps
// change: the sink must copy it or encode it before it returns.
type DeferringSink interface {
	trace.Sink
	RecordDeferred(e *trace.Event, v any, plain bool)
}

// data is the Data of an event for the value v, or nil if the sink takes
// v itself (then kept in s.deferred for record to hand over).
func (s *Sim) data(v any) json.RawMessage {
	if _, ok := s.sink.(DeferringSink); ok && !s.holding && v != nil {
		s.deferred, s.deferredPlain = v, s.plain(reflect.TypeOf(v))
		return nil
	}
	return marshal(v)
}

// plain reports whether values of type t are immutable once copied into
// an interface: booleans, numbers, strings, and arrays and structs of
// them. The answers are kept in the run's plainTypes (a fork starts its
// own, so that forks can run apart).
func (s *Sim) plain(t reflect.Type) bool {
	p, ok := s.plainTypes[t]
	if !ok {
		if s.plainTypes == nil {
			s.plainTypes = map[reflect.Type]bool{}
		}
		p = plainOf(t)
		s.plainTypes[t] = p
	}
	return p
}

func plainOf(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	case reflect.Array:
		return plainOf(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !plainOf(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
