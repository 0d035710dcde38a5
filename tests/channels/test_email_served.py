"""Email through a live server on loopback on both stores (in a thread, configured from
the environment as ``parkgate serve`` configures its workers, with a clock the test
moves), with aiosmtpd as the SMTP server: the message arrives with one signed link per
option; fetching every link as a scanner does changes nothing; only the page's POST
records, as the link's address; a link with anything changed, or past its expiry, is
refused; the email says whom the ask is for, how many must agree and until when; a
2-of-3 ask closes on the second address, each vote's page naming the voters; reminders and the close follow in
each thread; an SMTP server away delays the email and loses nothing.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from email_setup import ALICE, BOB, CAROL, SENDER, confirm, edited, email_server, form_of, note_of, outcome_of, park
from live_server import Server
from smtp_server import SmtpServer

from late_words import at
from parkgate import ManualClock
from polling import until

Factory = Any


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    running = SmtpServer().start()
    yield running
    running.stop()


# Both stores: the end-to-end checks run on each (the confirmation's write, the
# close's trigger-queued follow-up and the retried send are each a store's).
@pytest.fixture(params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, store_url_factory: Factory, tmp_path: Path, smtp: SmtpServer
) -> Iterator[Server]:
    running = email_server(store_url_factory(request.param), tmp_path, smtp, ManualClock()).start()
    yield running
    running.stop()


def timeline(client: httpx.Client, ask_id: str) -> list[dict[str, Any]]:
    answer = client.get(f"/v1/asks/{ask_id}/events")
    assert answer.status_code == 200, answer.text
    events: list[dict[str, Any]] = answer.json()["events"]
    return events


def ask_json(client: httpx.Client, ask_id: str) -> dict[str, Any]:
    answer = client.get(f"/v1/asks/{ask_id}")
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def test_the_email_has_a_signed_link_per_option_and_no_fetch_of_them_records_anything(
    server: Server, smtp: SmtpServer
) -> None:
    with server.client() as client:
        ask_id = park(client, "deploy-1", [ALICE])
        (sent,) = smtp.wait_for(1)
        assert sent.envelope_to == [ALICE] and sent.to == ALICE and sent.message["From"] == SENDER
        assert sent.message.get_content_type() == "multipart/alternative"
        assert sent.message["Subject"] == "Deploy to production?"
        links = sent.links
        assert len(links) == 3 and len(set(links)) == 3  # Deploy, Hold, Cancel
        assert "1. Deploy: " + links[0] in sent.text and "2. Hold: " + links[1] in sent.text
        assert "Cancel: " + links[2] in sent.text
        for link in links:  # the HTML part carries the same links, as buttons
            assert f'href="{link}"' in sent.html
        where = until(lambda: ask_json(client, ask_id).get("email"), 10, "the post's location")
        assert where == {"to": [ALICE], "message_ids": [sent.message["Message-ID"]]}

        # A scanner, a previewer, a prefetch: every link fetched, GET and HEAD, twice.
        before = ask_json(client, ask_id)
        for link in links * 2:
            page = httpx.get(link, timeout=30)
            assert page.status_code == 200 and "Deploy to production?" in page.text
            assert page.headers["content-security-policy"].startswith("default-src 'none'")
            assert page.headers["cache-control"] == "no-store"
            assert httpx.head(link, timeout=30).status_code == 200
        assert ask_json(client, ask_id) == before and before["status"] == "open"
        assert [message.to for message in smtp.got()] == [ALICE]  # nothing followed up

        # The page's button records it, as the address the link was sent to.
        held = form_of(httpx.get(links[1], timeout=30).text)  # Hold's page, open in another tab
        answered_at = server.clock.now()
        done = confirm(links[0])
        assert done.status_code == 200 and outcome_of(done.text) == "Selected 1. Deploy"
        ask = ask_json(client, ask_id)
        assert (ask["status"], ask["answer"], ask["answered_by"]) == ("answered", "Deploy", ALICE)

        # The close follows in the thread; a link of the closed ask says how and when it closed.
        closed = smtp.wait_for(2)[1]
        assert closed.message["In-Reply-To"] == sent.message["Message-ID"] == closed.message["References"]
        assert closed.message["Subject"] == "Re: Deploy to production?"
        assert closed.text.startswith(f"Answered: Deploy, by {ALICE} Closed 2026-")
        late = httpx.get(links[1], timeout=30)
        assert late.status_code == 409
        told = f"This question is already closed (answered by {ALICE} {at(answered_at)})."
        assert outcome_of(late.text) == told
        assert [event["type"] for event in timeline(client, ask_id)][-1] != "late"  # a link opened answers nothing
        # Hold's page pressed after the close: a late answer, logged so, and told the same.
        pressed = httpx.post(links[1].split("/email/l/")[0] + "/email/confirm", data=held, timeout=30)
        assert pressed.status_code == 409 and outcome_of(pressed.text) == told
        late_event = timeline(client, ask_id)[-1]
        assert (late_event["type"], late_event["sender"]) == ("late", ALICE)
        assert (late_event["data"]["surface"], late_event["data"]["text"]) == ("email", "Hold")
        assert ask_json(client, ask_id)["answer"] == "Deploy"  # the ask stays as it closed


def test_a_link_with_its_option_ask_address_or_expiry_changed_is_refused(server: Server, smtp: SmtpServer) -> None:
    with server.client() as client:
        ask_id = park(client, "deploy-2", [ALICE, BOB], responders=[ALICE, BOB])
        other_id = park(client, "deploy-3", [BOB])
        alice = next(message for message in smtp.wait_for(3) if message.to == ALICE)
        deploy = alice.links[0]
        form = form_of(httpx.get(deploy, timeout=30).text)
        for forged in (
            edited(deploy, 2, "2"),  # Hold instead of Deploy
            edited(deploy, 2, "cancel"),
            edited(deploy, 1, other_id),  # another ask
            edited(deploy, 3, BOB),  # another address
            edited(deploy, 4, 4_102_444_800),  # a later expiry
            deploy[:-2],  # a signature cut short
        ):
            page = httpx.get(forged, timeout=30)
            assert page.status_code == 403, forged
            assert outcome_of(page.text).startswith("This link is not one parkgate made as it is")
            token = forged.rpartition("/")[2]
            posted = httpx.post(f"{server.url}/email/confirm", data={"t": token, "csrf": form["csrf"]}, timeout=30)
            assert posted.status_code == 403
        # The real link with another link's CSRF token, or none: refused too.
        hold_form = form_of(httpx.get(alice.links[1], timeout=30).text)
        stolen = httpx.post(f"{server.url}/email/confirm", data={"t": form["t"], "csrf": hold_form["csrf"]}, timeout=30)
        assert stolen.status_code == 403
        assert httpx.post(f"{server.url}/email/confirm", data={"t": form["t"]}, timeout=30).status_code == 403
        for ask in (ask_id, other_id):
            assert ask_json(client, ask)["status"] == "open" and ask_json(client, ask)["votes"] == []


def test_two_of_three_addresses_confirming_close_a_two_of_three_ask(server: Server, smtp: SmtpServer) -> None:
    with server.client() as client:
        ask_id = park(
            client, "deploy-4", [ALICE, BOB, CAROL], responders=[ALICE, BOB, CAROL], quorum=2, ttl_seconds=3600
        )
        sent = smtp.wait_for(3)
        links = {message.to: message.links for message in sent}
        assert sorted(links) == [ALICE, BOB, CAROL]
        # Each email says whom the question is for, how many must agree, and until when.
        asked_at = datetime.fromisoformat(ask_json(client, ask_id)["asked_at"])
        about = (
            f"For {ALICE}, {BOB} or {CAROL} · 2 of 3 must agree · "
            f"open for 1 h, until {(asked_at + timedelta(hours=1)).strftime('%Y-%m-%d %H:%M')} UTC"
        )
        for message in sent:
            assert about in message.text and html.escape(about) in message.html
        first = confirm(links[ALICE][0])
        assert outcome_of(first.text) == 'Vote taken: 1 of 2 votes for "Deploy" (option 1).'
        assert note_of(first.text) == f"Votes so far (2 needed): 1. Deploy: {ALICE}."  # the voters named
        assert ask_json(client, ask_id)["status"] == "open"
        assert confirm(links[ALICE][0]).status_code == 200  # the same confirmation again counts once
        second = confirm(links[BOB][0])
        assert outcome_of(second.text) == "Selected 1. Deploy"
        ask = ask_json(client, ask_id)
        assert (ask["status"], ask["answer"]) == ("answered", "Deploy")
        assert sorted(vote["sender"] for vote in ask["votes"]) == [ALICE, BOB]
        closes = [message for message in smtp.wait_for(6)[3:]]
        assert sorted(message.to for message in closes) == [ALICE, BOB, CAROL]
        assert httpx.get(links[CAROL][0], timeout=30).status_code == 409


def test_a_link_used_after_its_expiry_is_refused_and_the_ask_expires_by_its_due_read(
    server: Server, smtp: SmtpServer
) -> None:
    assert server.clock is not None
    with server.client() as client:
        ask_id = park(client, "deploy-5", [ALICE, BOB], responders=[ALICE, BOB], quorum=2, ttl_seconds=60)
        links = {message.to: message.links for message in smtp.wait_for(2)}
        server.clock.advance(50)
        confirm(links[ALICE][0])  # a vote touches the ask: it now falls due 60 s from here
        server.clock.advance(20)  # past Bob's link's expiry, not the ask's
        page = httpx.get(links[BOB][0], timeout=30)
        assert page.status_code == 410 and outcome_of(page.text).startswith("This link expired at 2026-")
        form = form_of(httpx.get(links[ALICE][1], timeout=30).text)  # Alice's links have expired as well
        assert form == {}
        ask = ask_json(client, ask_id)
        assert ask["status"] == "open" and [vote["sender"] for vote in ask["votes"]] == [ALICE]

        due_at = server.clock.now() + timedelta(seconds=40)  # 60 s after Alice's vote
        server.clock.advance(60)  # past the ask's TTL: the due read expires it, and the thread says so
        closes = smtp.wait_for(4)[2:]
        assert {message.to for message in closes} == {ALICE, BOB}
        assert all(message.text.startswith("Expired after 1 min, nothing ran.") for message in closes)
        assert ask_json(client, ask_id)["status"] == "expired"
        late = httpx.get(links[BOB][0], timeout=30)
        assert late.status_code == 409
        assert outcome_of(late.text) == f"This question is already closed (it expired {at(due_at)})."


def test_a_reminder_follows_in_each_thread_with_links_that_answer(server: Server, smtp: SmtpServer) -> None:
    assert server.clock is not None
    with server.client() as client:
        ask_id = park(client, "deploy-6", [ALICE], responders=[ALICE], ttl_seconds=600, remind_after=60)
        (sent,) = smtp.wait_for(1)
        server.clock.advance(61)
        reminder = smtp.wait_for(2)[1]
        assert reminder.to == ALICE and reminder.message["In-Reply-To"] == sent.message["Message-ID"]
        assert reminder.message["Subject"] == "Re: Deploy to production?"
        assert reminder.text.startswith(f"Still waiting on {ALICE}: Deploy to production?")
        assert len(reminder.links) == 3
        assert outcome_of(confirm(reminder.links[1]).text) == "Selected 2. Hold"
        assert ask_json(client, ask_id)["answer"] == "Hold"


def test_a_text_ask_is_answered_on_its_form_and_cancel_drops_another(server: Server, smtp: SmtpServer) -> None:
    with server.client() as client:
        text_id = park(client, "notes", [ALICE], kind="text", options=None, prompt="Release notes?")
        (sent,) = smtp.wait_for(1)
        answer_link, cancel_link = sent.links
        assert "Answer: " + answer_link in sent.text and "Cancel: " + cancel_link in sent.text
        page = httpx.get(answer_link, timeout=30)
        assert page.status_code == 200 and '<textarea id="text" name="text"' in page.text
        assert ask_json(client, text_id)["status"] == "open"
        done = confirm(answer_link, text="Fixes <b>the</b> login bug")
        assert done.status_code == 200 and outcome_of(done.text) == "Got it."
        assert "Your answer: Fixes &lt;b&gt;the&lt;/b&gt; login bug" in done.text  # escaped, never markup
        ask = ask_json(client, text_id)
        assert (ask["status"], ask["answer"], ask["answered_by"]) == ("answered", "Fixes <b>the</b> login bug", ALICE)

        drop_id = park(client, "deploy-7", [BOB])
        cancel = smtp.wait_for(3)[2].links[2]
        assert "Drop the question" in httpx.get(cancel, timeout=30).text
        dropped = confirm(cancel)
        assert dropped.status_code == 200 and outcome_of(dropped.text) == "Dropped the menu, nothing ran."
        ask = ask_json(client, drop_id)
        assert (ask["status"], ask["closed_by"]) == ("cancelled", BOB)


def test_with_the_smtp_server_away_the_send_is_retried_and_delivered_when_it_returns(
    server: Server, smtp: SmtpServer
) -> None:
    assert server.clock is not None
    smtp.stop()
    with server.client() as client:
        ask_id = park(client, "deploy-8", [ALICE])
        until(lambda: "failed, attempt 1" in server.log_text(), 20, "the first send to fail")
        assert client.get("/v1/channels/failed").json()["jobs"] == []
        assert "email" not in ask_json(client, ask_id) or ask_json(client, ask_id)["email"] is None
        smtp.start()
        server.clock.advance(5)  # past the first retry's backoff
        (sent,) = smtp.wait_for(1)
        assert sent.to == ALICE and len(sent.links) == 3
        until(lambda: ask_json(client, ask_id).get("email"), 10, "the post's location")
        assert client.get("/v1/channels/failed").json()["jobs"] == []
        metrics = client.get("/metrics").text  # counted per channel: a retry, then the send
        assert 'parkgate_channel_jobs_total{channel="email",job="post",outcome="retry",surface="http"}' in metrics
        assert 'parkgate_channel_jobs_total{channel="email",job="post",outcome="done",surface="http"} 1.0' in metrics


def test_a_refusal_for_good_is_given_up_at_once_and_shown_as_failed(server: Server, smtp: SmtpServer) -> None:
    smtp.refuse_sender = "550 5.7.1 this sender is not allowed here"
    with server.client() as client:
        ask_id = park(client, "deploy-9", [ALICE])
        (job,) = until(lambda: client.get("/v1/channels/failed").json()["jobs"], 20, "the failed job")
        assert (job["ask_id"], job["channel"], job["job"], job["attempts"]) == (ask_id, "email", "post", 1)
        assert "550" in job["last_error"] and "not allowed" in job["last_error"]
        assert smtp.got() == []
        metrics = client.get("/metrics").text
        assert 'parkgate_channel_jobs_total{channel="email",job="post",outcome="failed",surface="http"} 1.0' in metrics


def test_the_escalation_mails_the_addresses_it_adds_and_their_links_answer(server: Server, smtp: SmtpServer) -> None:
    assert server.clock is not None
    with server.client() as client:
        fields = {"responders": [ALICE], "ttl_seconds": 600, "escalate_after": 60, "escalate_to": [BOB]}
        ask_id = park(client, "deploy-10", [ALICE], **fields)
        (sent,) = smtp.wait_for(1)
        server.clock.advance(61)
        escalated = {message.to: message for message in smtp.wait_for(3)[1:]}
        assert sorted(escalated) == [ALICE, BOB]
        assert escalated[ALICE].message["In-Reply-To"] == sent.message["Message-ID"]
        assert escalated[BOB].text.startswith(f"Now also asking {BOB}: Deploy to production?")
        assert outcome_of(confirm(escalated[BOB].links[0]).text) == "Selected 1. Deploy"
        assert ask_json(client, ask_id)["answered_by"] == BOB
