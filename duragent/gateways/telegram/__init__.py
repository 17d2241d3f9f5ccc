"""Telegram front end (python-telegram-bot 22). Never imports another front end.

``build_telegram_gateway`` is what the runtime calls (``assemble``); ``service`` is the
runtime's service, ``polling`` / ``webhook`` receive updates, ``updates`` translates them,
``outbound`` sends, ``render`` formats. See ``specs/202611240330.telegram-gateway.md``.
"""

from __future__ import annotations

from duragent.gateways.telegram.assemble import build_telegram_gateway
from duragent.gateways.telegram.service import TelegramGateway

__all__ = ["TelegramGateway", "build_telegram_gateway"]
