package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/liverpc"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
	"github.com/spf13/cobra"
)

func newRPCCmd() *cobra.Command {
	var api apiFlags
	var requestID, semantics string
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rpc SERVER PROC [BODY|-]",
		Short: "Call a procedure on a member, through a node's API",
		Long: `Calls procedure PROC on member SERVER (its id) through a node's API
(POST /v1/rpc/SERVER/PROC; the node must not be SERVER itself) with BODY as
the packed arguments (JSON; - reads them from standard input; none: empty),
and prints the packed result.

With --request-id the id is the call's identity at SERVER's duplicate table,
on its disk: a call whose answer is lost is sent again with the same id, to
the next endpoint in turn, and SERVER runs it at most once — whichever node
forwards it, before or after either restarts — answering every repeat with
the first run's result. Without one the call is sent once, to the first
endpoint.

Exit status: 0 with the result; 1 if the procedure failed (HTTP 422, its
error printed), the call was not run (503: too many calls under way), or no
result came (504: a timeout, a crash, a kill — the procedure may have run);
2 for bad usage, or a request the node refused as bad (400, 413).`,
		Example: `  cohort rpc 1 add '[2,40]' --endpoints 127.0.0.1:7100
  echo '[2,40]' | cohort rpc 1 add - --request-id job-17 --endpoints 127.0.0.1:7100,127.0.0.1:7101 --json`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, err := strconv.Atoi(args[0])
			if err != nil || server < 0 {
				return usageErr("SERVER %q: want a member's id (0, 1, ...)", args[0])
			}
			if err := httpapi.ValidName("procedure", args[1]); err != nil {
				return usageErr("PROC: %v", err)
			}
			if requestID != "" && !rpc.ValidKey(requestID) {
				return usageErr("--request-id %q: want 1 to %d of A-Z a-z 0-9 . _ -", requestID, rpc.MaxKey)
			}
			var sem rpc.Semantics
			if semantics != "" {
				if sem, err = rpc.ParseSemantics(semantics); err != nil {
					return usageErr("--semantics %q: want maybe, at-least-once or at-most-once", semantics)
				}
			}
			var body []byte
			switch {
			case len(args) < 3:
			case args[2] == "-":
				if body, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), liverpc.MaxPayload+1)); err != nil {
					return err
				}
			default:
				body = []byte(args[2])
			}
			if len(body) > liverpc.MaxPayload {
				return usageErr("BODY: more than %d bytes", liverpc.MaxPayload)
			}
			endpoints, token, ctx, cancel, err := api.open(timeout)
			if err != nil {
				return err
			}
			defer cancel()
			c := &liverpc.Client{Endpoints: endpoints, Token: token, Semantics: sem}
			data, err := c.Call(ctx, proc.ID(server), args[1], requestID, body)
			var se *liverpc.StatusError
			var re *liverpc.RemoteError
			switch {
			case errors.As(err, &se) && (se.Code == http.StatusBadRequest || se.Code == http.StatusRequestEntityTooLarge):
				return usageErr("%v", err)
			case errors.As(err, &re):
				return failed(fmt.Errorf("the procedure failed (HTTP 422): %w", err))
			case errors.As(err, &se) && se.Code == http.StatusServiceUnavailable:
				return failed(fmt.Errorf("%w — the procedure did not run", err))
			case err != nil:
				return failed(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				r := map[string]any{"server": server, "proc": args[1]}
				if requestID != "" {
					r["request_id"] = requestID
				}
				if json.Valid(data) {
					r["result"] = json.RawMessage(data)
				} else {
					r["result_base64"] = data
				}
				return json.NewEncoder(out).Encode(r)
			}
			_, err = fmt.Fprintf(out, "%s\n", data)
			return err
		},
	}
	api.add(cmd)
	cmd.AddCommand(newRPCGenCmd())
	cmd.Flags().StringVar(&requestID, "request-id", "", "the call's id: resent through the next endpoint if its answer is lost, run at most once (1 to 128 of A-Z a-z 0-9 . _ -)")
	cmd.Flags().StringVar(&semantics, "semantics", "", "maybe, at-least-once or at-most-once (default: the node's, at-most-once)")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "give up after this long (0: never)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"server","proc","request_id","result"} (result_base64 if the result is not JSON)`)
	return cmd
}
