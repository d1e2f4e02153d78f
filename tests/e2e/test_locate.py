"""`locate` over --locate-root under the deny|ask|allow policy. `ask` really asks:
elicitation/create in the handshake era, an InputRequiredResult with a sealed
requestState in the 2026-07-28 era; a declined request never runs the search."""

import os
from pathlib import Path

import pytest
from conftest import call, connect, run
from mcp import types
from mcp.shared.exceptions import MCPError

ARGS = {"query": "report", "sort": "path"}


@pytest.fixture
def places(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    (root / "notes.txt").write_text("served\n")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "q3").mkdir(parents=True)
    (elsewhere / "q3" / "report-q3.pdf").write_text("LOCATE-CONTENT-NEVER-READ\n")
    (elsewhere / "annual report.txt").write_text("LOCATE-CONTENT-NEVER-READ\n")
    (elsewhere / "other.txt").write_text("x\n")
    return Path(os.path.realpath(root)), Path(os.path.realpath(elsewhere))


def server_args(places, policy):
    root, elsewhere = places
    return ["--root", str(root), "--locate-root", str(elsewhere), "--locate", policy, "--no-persist"]


class Asker:
    """An elicitation callback that answers as a user would."""

    def __init__(self, action, content=None):
        self.action, self.content, self.asked = action, content, []

    async def __call__(self, context, params):
        self.asked.append(params)
        return types.ElicitResult(action=self.action, content=self.content)


def expected_paths(elsewhere):
    return [str(elsewhere / "annual report.txt"), str(elsewhere / "q3" / "report-q3.pdf")]


def test_locate_is_listed_only_with_locate_roots(places):
    root, _ = places

    async def go(args):
        async with connect("stdio", "legacy", args) as c:
            return [t.name for t in (await c.list_tools()).tools]

    assert "locate" not in run(go(["--root", str(root), "--no-persist"]))
    assert run(go(server_args(places, "allow")))[:3] == ["search", "locate", "grep"]


def test_deny_refuses_and_says_how_to_enable(places):
    async def go():
        async with connect("stdio", "legacy", server_args(places, "deny")) as c:
            return await call(c, "locate", ARGS)

    is_error, s, text, _ = run(go())
    assert is_error and s["error"]["code"] == "LOCATE_DISABLED"
    assert "--locate ask" in s["error"]["hint"] and "results" not in s


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_allow_shows_full_paths_that_cannot_be_read(places, era):
    _, elsewhere = places

    async def go():
        async with connect("stdio", era, server_args(places, "allow")) as c:
            found = await call(c, "locate", ARGS)
            reads = [await call(c, "read", {"path": p}) for p in expected_paths(elsewhere)]
            grep = await call(c, "grep", {"pattern": "LOCATE", "path": str(elsewhere)})
            listing = await call(c, "list", {"path": str(elsewhere)})
            return found, reads, grep, listing

    (is_error, s, _, _), reads, grep, listing = run(go())
    assert not is_error
    assert s["results"] == expected_paths(elsewhere)
    for denied in [*reads, grep, listing]:
        assert denied[0] and denied[1]["error"]["code"] == "PATH_OUTSIDE_ROOT", denied[1]
        assert "LOCATE-CONTENT-NEVER-READ" not in denied[2]


@pytest.mark.parametrize(
    "args,needle",
    [({"query": "r"}, "at least 2 characters"), ({"query": "content:secret report"}, "`content:` is not allowed")],
)
def test_bad_queries_are_invalid_params(places, args, needle):
    async def go():
        async with connect("stdio", "legacy", server_args(places, "allow")) as c:
            with pytest.raises(MCPError) as info:
                await c.call_tool("locate", args)
            return info.value.error

    error = run(go())
    assert error.code == -32602 and needle in error.message


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_ask_accept_runs_the_search(places, era, transport, start_http):
    _, elsewhere = places
    extra = ["--http-sessions"] if transport == "http" and era == "legacy" else []
    server = start_http(*server_args(places, "ask"), *extra) if transport == "http" else None
    user = Asker("accept", {"allow": True})

    async def go():
        async with connect(transport, era, server_args(places, "ask"), server, elicitation_callback=user) as c:
            return await call(c, "locate", ARGS)

    is_error, s, _, _ = run(go())
    assert not is_error, s
    assert s["results"] == expected_paths(elsewhere)
    assert len(user.asked) == 1
    question = user.asked[0]
    assert "`report`" in question.message and str(elsewhere) in question.message
    assert question.requested_schema["properties"]["allow"]["type"] == "boolean"


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize(
    "action,content,code",
    [
        ("decline", None, "DECLINED"),
        ("cancel", None, "CANCELLED"),
        ("accept", {"allow": False}, "DECLINED"),
        # Not a yes: an accept that does not say allow: true.
        ("accept", None, "CANCELLED"),
        ("accept", {"allow": "yes"}, "CANCELLED"),
    ],
)
def test_ask_decline_and_cancel_never_search(places, era, action, content, code):
    user = Asker(action, content)

    async def go():
        async with connect("stdio", era, server_args(places, "ask"), elicitation_callback=user) as c:
            result = await call(c, "locate", ARGS)
            diagnostics = await call(c, "diagnostics", {})
            return result, diagnostics

    (is_error, s, text, _), (_, d, _, _) = run(go())
    assert is_error and s["error"]["code"] == code
    assert "results" not in s and "report-q3" not in text
    assert len(user.asked) == 1
    assert d["locate"]["policy"] == "ask"


def test_ask_without_elicitation_tells_the_operator_how_to_allow(places, start_http):
    plain_http = start_http(*server_args(places, "ask"))
    session_http = start_http(*server_args(places, "ask"), "--http-sessions")

    async def legacy(transport, server):
        async with connect(transport, "legacy", server_args(places, "ask"), server) as c:
            return await call(c, "locate", ARGS)

    for transport, server, why in [
        ("stdio", None, "did not declare"),
        ("http", plain_http, "--http-sessions"),
        # With a session the question could travel: what is missing is the client's capability.
        ("http", session_http, "did not declare"),
    ]:
        is_error, s, _, _ = run(legacy(transport, server))
        assert is_error and s["error"]["code"] == "LOCATE_DISABLED", s
        assert "--locate allow" in s["error"]["hint"] and why in s["error"]["message"], s

    async def modern():
        async with connect("stdio", "2026-07-28", server_args(places, "ask")) as c:
            with pytest.raises(MCPError) as info:
                await c.call_tool("locate", ARGS)
            return info.value.error

    error = run(modern())
    assert error.code == -32021 and "--locate allow" in error.message
    assert error.data["requiredCapabilities"] == {"elicitation": {}}


def test_request_state_is_sealed_and_bound_to_the_arguments(places):
    """Driving the 2026-07-28 rounds by hand: a tampered state, or a state issued for
    other arguments, is refused; a state without the answer asks again."""
    _, elsewhere = places
    accept = {"consent": {"action": "accept", "content": {"allow": True}}}

    async def go():
        async with connect("stdio", "2026-07-28", server_args(places, "ask"), elicitation_callback=Asker("accept")) as c:
            s = c.session
            first = await s.call_tool("locate", ARGS, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult), first
            assert list(first.input_requests) == ["consent"]
            state = first.request_state
            tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
            outcomes = {}
            for label, args, st in [
                ("tampered", ARGS, tampered),
                ("other-args", {"query": "passwords"}, state),
                ("garbage", ARGS, "not-a-state"),
            ]:
                with pytest.raises(MCPError) as info:
                    await s.call_tool("locate", args, input_responses=accept, request_state=st, allow_input_required=True)
                outcomes[label] = info.value.error
            again = await s.call_tool("locate", ARGS, request_state=state, allow_input_required=True)
            done = await s.call_tool("locate", ARGS, input_responses=accept, request_state=state, allow_input_required=True)
            return outcomes, again, done

    outcomes, again, done = run(go())
    for label, error in outcomes.items():
        assert error.code == -32602 and "requestState" in error.message, (label, error)
    assert isinstance(again, types.InputRequiredResult), "a state without its answer asks again"
    assert done.structured_content["results"] == expected_paths(elsewhere)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_consent_counts_once(places, transport, start_http):
    """The same sealed state and answer sent again (a replay, even for the same
    arguments and within the ten minutes) is refused; a new question works."""
    _, elsewhere = places
    server = start_http(*server_args(places, "ask")) if transport == "http" else None
    accept = {"consent": {"action": "accept", "content": {"allow": True}}}

    async def go():
        async with connect(transport, "2026-07-28", server_args(places, "ask"), server, elicitation_callback=Asker("accept")) as c:
            s = c.session
            first = await s.call_tool("locate", ARGS, allow_input_required=True)
            state = first.request_state
            done = await s.call_tool("locate", ARGS, input_responses=accept, request_state=state, allow_input_required=True)
            with pytest.raises(MCPError) as replayed:
                await s.call_tool("locate", ARGS, input_responses=accept, request_state=state, allow_input_required=True)
            fresh = await s.call_tool("locate", ARGS, allow_input_required=True)
            assert fresh.request_state != state, "every question has its own state"
            again = await s.call_tool("locate", ARGS, input_responses=accept, request_state=fresh.request_state, allow_input_required=True)
            return done, replayed.value.error, again

    done, replayed, again = run(go())
    assert done.structured_content["results"] == expected_paths(elsewhere)
    assert replayed.code == -32602 and "already answered" in replayed.message, replayed
    assert "report-q3" not in str(replayed)
    assert again.structured_content["results"] == expected_paths(elsewhere)
