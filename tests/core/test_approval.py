"""A pending approval round-trips through the snapshot's mapping; decisions keep wire names."""

from __future__ import annotations

from duragent.core.approval import DECISIONS, ApprovalDecision, PendingApproval


def test_an_approval_survives_the_round_trip_through_its_mapping() -> None:
    approval = PendingApproval(
        call_id="c1", tool_name="bash", arguments={"command": "ls"}, command="ls", tool_type="bash"
    )
    assert PendingApproval.from_dict(approval.to_dict()) == approval


def test_an_approval_rebuilt_from_events_alone_knows_only_its_call_and_command() -> None:
    approval = PendingApproval.from_dict({"call_id": "c7", "command": "rm x"})
    assert approval.call_id == "c7"
    assert approval.command == "rm x"
    assert approval.tool_name is None
    assert dict(approval.arguments) == {}
    assert approval.tool_type == "bash"


def test_the_decisions_are_the_wire_names_in_their_documented_order() -> None:
    assert DECISIONS == ("allow_once", "allow_always", "deny")
    assert ApprovalDecision("deny") is ApprovalDecision.DENY


def test_the_requester_round_trips_and_is_left_out_when_unknown() -> None:
    asked = PendingApproval(call_id="c1", command="ls", requester_id="u42")
    anyone = PendingApproval(call_id="c2", command="ls")
    assert PendingApproval.from_dict(asked.to_dict()) == asked
    assert "requester_id" not in anyone.to_dict()  # written exactly as before
    assert PendingApproval.from_dict(anyone.to_dict()).requester_id is None
