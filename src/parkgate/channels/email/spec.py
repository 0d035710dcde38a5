"""Email as parkgate knows it: the channel's one declaration (:data:`SPEC`, registered on
import), its name and its settings. Importing it imports nothing else of the package."""

from __future__ import annotations

from parkgate.channels.registry import ChannelSpec, register

#: The channel's name: the key of its targets (``post_to``), jobs and ask JSON field.
NAME = "email"
ENV_SMTP_URL = "PARKGATE_SMTP_URL"
ENV_SMTP_USER = "PARKGATE_SMTP_USER"
ENV_SMTP_PASSWORD = "PARKGATE_SMTP_PASSWORD"
ENV_FROM = "PARKGATE_EMAIL_FROM"
ENV_SECRET = "PARKGATE_EMAIL_SECRET"
ENV_PUBLIC_URL = "PARKGATE_PUBLIC_URL"

SPEC = register(
    ChannelSpec(
        name=NAME,
        title="Email",
        settings={
            ENV_SMTP_URL: "the SMTP server, smtp://host:587 (STARTTLS) or smtps://host:465 (TLS): set, parkgate "
            "serve sends asks by email",
            ENV_SMTP_USER: "the SMTP user, when it is not in the URL",
            ENV_SMTP_PASSWORD: "the SMTP password, when it is not in the URL",
            ENV_FROM: "the address the emails come from (Ask Bot <asks@example.com>)",
            ENV_SECRET: "signs the links in the emails: whsec_ + the base64 of at least 24 random bytes",
            ENV_PUBLIC_URL: "the base URL the links point at (https://parkgate.example.com); pages under /email/",
        },
        switch=ENV_SMTP_URL,
        target="parkgate.channels.email.models:EmailTarget",
        target_id="to",
        location="parkgate.channels.email.models:EmailPost",
        serve="parkgate.channels.email.serving:serve",
        sending="parkgate.channels.email.serving:sending",
        package="parkgate.channels.email",
    )
)
