"""The seams of the control core: the engine surface it drives, the loader's fragment checks and
the authorization core it steers.

They are handed to ``Control`` by the shell (``launch.run``): the running ``Engine``, the
module ``mockmcp.scenario.fragments`` and, for a scenario with ``auth`` over HTTP, the
authorization core's steering (``mockmcp.core.auth.steering.AuthSteering``). Only what the operations really use is declared here,
so a test can hand in anything that has it, and the engine's other parts stay its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from mockmcp.scenario.model import base as model

if TYPE_CHECKING:
    from mockmcp.scenario.model.tasks import TaskSpec
    from mockmcp.core.actions import Emit, Send
    from mockmcp.core.envelope import Envelope
    from mockmcp.core.session import Session
    from mockmcp.core.tasks import TaskTable

Path_ = tuple[Any, ...]  # a JSON path inside the control request, where a problem is located


class RuleLabels(Protocol):
    """How the ``counters`` operation names a rule (``Services.rule_label``)."""

    def rule_label(self, rule: model.Rule) -> str: ...


class ControlledEngine(Protocol):
    """What the control operations use of the running engine (``mockmcp.core.engine.Engine``):
    its scenario (replaced by definitions), the session's state, armed replies, subscriptions and
    counters, the task table, a notification's envelope, and ``fan_out`` of an event."""

    @property
    def scenario(self) -> model.Scenario: ...

    @property
    def session(self) -> Session: ...

    @property
    def services(self) -> RuleLabels: ...

    @property
    def envelope(self) -> Envelope: ...

    @property
    def tasks(self) -> TaskTable: ...

    def fan_out(self, emit: Emit) -> list[Send]: ...

    def replace_scenario(self, scenario: model.Scenario) -> None: ...


class Fragments(Protocol):
    """The loader's checks for run-time fragments (``mockmcp.scenario.fragments``), handed in by the shell."""

    def primitive(
        self, scenario: model.Scenario, kind: str, definition: Any, *, replace: bool, at: Path_, request_id: Any
    ) -> tuple[model.Scenario, list[str]]: ...

    def rule(
        self,
        scenario: model.Scenario,
        method: str,
        when: Any,
        steps: Any,
        *,
        at_when: Path_,
        at_steps: Path_,
        request_id: Any,
        what: str = ...,
    ) -> model.Rule: ...

    def task_change(self, phase: dict[str, Any] | None, outcome: dict[str, Any] | None, *, request_id: Any) -> TaskSpec: ...


class AuthSurface(Protocol):
    """What the authorization operations use of the running authorization core
    (``mockmcp.core.auth.steering.AuthSteering``); the parameters are checked already."""

    def expire(self, client_id: str | None, scope: str | None, refresh: bool) -> int: ...

    def revoke(self, client_id: str | None, scope: str | None, refresh: bool) -> int: ...

    def require(self, scopes: list[str], method: str | None, tool: str | None, prompt: str | None,
                resource: str | None) -> dict[str, Any]: ...

    def pending(self) -> list[dict[str, Any]]: ...

    def decide(self, which: str | None, approve: bool, scopes: list[str] | None, description: str | None) -> list[str]: ...

    def override(self, resource: dict[str, Any] | None, server: dict[str, Any] | None) -> dict[str, Any]: ...

    def migrate(self) -> dict[str, Any] | None: ...

    def describe(self) -> dict[str, Any]: ...
