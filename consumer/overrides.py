"""What a record of the override topic means, whether it may be believed, and whether an
override is in force (pure).

Kafka's ACLs say who may write the override topic, but anyone who got WRITE on it could open a
paused cluster. So a record is judged (``judge_override_record``) before it counts:

1. it must decode (``interpret_override``);
2. its signature (``schemas.signature``, over the key ``cluster`` and the value; a tombstone is
   signed too) is checked against the operator identities unless the mode is ``accept``: with
   ``require`` a record not signed by an operator is refused, with ``warn`` it is used and said
   to be unverified;
3. ``setBy`` is whoever signed it: the operator identity that matched (the certificate's RFC 4514
   subject or ``DNS:`` name), never the record's own claim; unverified, the claim is kept and
   marked so;
4. ``setAt`` must be within the allowed skew of the record's arrival (its Kafka timestamp: the
   broker's clock on a topic with ``message.timestamp.type=LogAppendTime``) and not ahead of
   the reader's own clock by more than that skew, so a record cannot be dated to take effect
   later, nor an old record be written again to take effect again.

A refused record never takes effect: the override in force, if any, stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from cryptography import x509
from pydantic import ValidationError

from consumer.signatures import SignatureMode, check_operator_signature
from schemas.decision import DecisionReason, QuotaState, ReasonKind
from schemas.decode import Rejection, RejectionReason, strict_text_problem
from schemas.override import OVERRIDE_KEY, QuotaOverride

DEFAULT_MAX_SET_AT_SKEW_SECONDS = 300.0
"""How far ``setAt`` may be from the record's arrival: clocks of operators' machines and brokers
differ by seconds, the command writes within its delivery timeout."""

CLEARED = None
"""A tombstone: the override was cleared before it expired."""


def interpret_override(key: bytes | None, value: bytes | None) -> QuotaOverride | Rejection | None:
    """The override a record sets, ``CLEARED`` (None) for a tombstone, or why it is unusable."""
    if key != OVERRIDE_KEY:
        return Rejection(RejectionReason.INVALID_KEY, f"override key {key!r:.40} is not 'cluster'")
    if value is None:
        return CLEARED
    problem = strict_text_problem(value)
    if problem is not None:
        return problem
    try:
        return QuotaOverride.model_validate_json(value)
    except ValidationError as error:
        first = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        return Rejection(RejectionReason.INVALID_FIELD, f"{where}: {first['msg']}"[:200])


def in_force(override: QuotaOverride | None, now: datetime) -> bool:
    return override is not None and override.set_at <= now < override.expires_at


def override_reason(override: QuotaOverride) -> DecisionReason:
    factor = 1.0 if override.state is QuotaState.OPEN else 0.0
    return DecisionReason(
        kind=ReasonKind.OVERRIDE,
        state=override.state,
        throttle_factor=factor,
        detail=(
            f"forced {override.state.value} by {override.set_by} until "
            f"{override.expires_at.isoformat()}: {override.reason}"
        ),
    )


class RefusalReason(StrEnum):
    """Why an override record was refused: the ``reason`` label of the refusal counter."""

    INVALID = "invalid"
    UNSIGNED = "unsigned"
    MALFORMED = "malformed"
    UNTRUSTED_CERTIFICATE = "untrusted_certificate"
    EXPIRED_CERTIFICATE = "expired_certificate"
    BAD_SIGNATURE = "bad_signature"
    NOT_AN_OPERATOR = "not_an_operator"
    SET_AT_SKEW = "set_at_skew"


_REASON_OF_OUTCOME = {
    "unsigned": RefusalReason.UNSIGNED,
    "malformed": RefusalReason.MALFORMED,
    "untrusted_certificate": RefusalReason.UNTRUSTED_CERTIFICATE,
    "expired_certificate": RefusalReason.EXPIRED_CERTIFICATE,
    "bad_signature": RefusalReason.BAD_SIGNATURE,
    "wrong_identity": RefusalReason.NOT_AN_OPERATOR,
}


@dataclass(frozen=True)
class OverridePolicy:
    """Whom to believe about overrides: the mode, the CA certificates, the operator identities
    (exact RFC 4514 subjects or ``DNS:`` names) and the allowed ``setAt`` skew."""

    mode: SignatureMode = SignatureMode.ACCEPT
    ca_certificates: Sequence[x509.Certificate] = ()
    operators: Sequence[str] = ()
    max_set_at_skew_seconds: float = DEFAULT_MAX_SET_AT_SKEW_SECONDS


@dataclass(frozen=True, slots=True)
class RefusedOverride:
    """A record that did not take effect, and why (shown by ``status``, logged, counted)."""

    reason: RefusalReason
    detail: str
    arrived_at: datetime
    state: str | None = None
    """What it tried to force (None: a tombstone, or undecodable)."""
    signer: str | None = None
    """The certificate's subject, when it had a readable one."""


@dataclass(frozen=True, slots=True)
class OverrideVerdict:
    """What a record does: set ``override``, clear it (``override`` None), or nothing
    (``refusal``). ``unverified`` says why a record used under ``warn`` failed its check."""

    override: QuotaOverride | None = None
    refusal: RefusedOverride | None = None
    unverified: str | None = None
    claimed_by: str | None = field(default=None)
    """The record's own ``setBy`` when the signer's identity replaced a different one."""


def judge_override_record(
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
    *,
    arrived_at: datetime | None,
    now: datetime,
    policy: OverridePolicy,
) -> OverrideVerdict:
    """Whether the record ``key``/``value`` (with its Kafka ``headers`` and timestamp
    ``arrived_at``; None when Kafka gave none: the time it is read) sets, clears or is refused."""
    arrival = arrived_at or now
    event = interpret_override(key, value)
    if isinstance(event, Rejection):
        return _refused(RefusalReason.INVALID, event.describe(), arrival)
    state = None if event is None else event.state.value
    unverified = None
    signer: str | None = None
    if policy.mode is not SignatureMode.ACCEPT:
        check = check_operator_signature(
            key,
            value,
            headers,
            ca_certificates=policy.ca_certificates,
            operators=policy.operators,
            now=now,
        )
        if check.trusted:
            signer = check.signer
        elif policy.mode is SignatureMode.REQUIRE:
            reason = _REASON_OF_OUTCOME[check.outcome.value]
            return _refused(reason, check.detail, arrival, state, check.signer)
        else:
            unverified = f"{check.outcome.value}: {check.detail}"
    if event is None:
        return OverrideVerdict(None, unverified=unverified)
    skew = _set_at_skew_problem(event, arrival, now, policy.max_set_at_skew_seconds)
    if skew is not None:
        return _refused(RefusalReason.SET_AT_SKEW, skew, arrival, state, signer)
    if signer is not None:
        claimed = event.set_by if event.set_by != signer else None
        return OverrideVerdict(event.model_copy(update={"set_by": signer}), claimed_by=claimed)
    if unverified is not None:
        marked = f"{event.set_by} (unverified: {unverified})"[:500]
        return OverrideVerdict(event.model_copy(update={"set_by": marked}), unverified=unverified)
    return OverrideVerdict(event)


def _set_at_skew_problem(
    override: QuotaOverride, arrival: datetime, now: datetime, max_skew_seconds: float
) -> str | None:
    allowed = timedelta(seconds=max_skew_seconds)
    if abs(override.set_at - arrival) > allowed:
        return (
            f"setAt {override.set_at.isoformat()} is more than {max_skew_seconds:g}s from its "
            f"arrival {arrival.isoformat()}"
        )
    if override.set_at - now > allowed:  # a producer may date its record (CreateTime) itself
        return (
            f"setAt {override.set_at.isoformat()} is more than {max_skew_seconds:g}s ahead of "
            f"this reader's clock ({now.isoformat()})"
        )
    return None


def _refused(
    reason: RefusalReason,
    detail: str,
    arrival: datetime,
    state: str | None = None,
    signer: str | None = None,
) -> OverrideVerdict:
    return OverrideVerdict(refusal=RefusedOverride(reason, detail[:300], arrival, state, signer))
