# ruff: noqa: E501  (hand-written sentences read better unbroken)
"""Hand-written phrasings behind the project's own corpus (``training/data/corpus.jsonl``).

Each label has single-message templates (chat lines, emails, non-native English, slang,
hard cases that borrow another intent's words) and multi-turn scenarios whose final
message only makes sense with the history. ``{slot}`` fields are filled by
``training.build_corpus`` from the value lists at the bottom of this module.
"""

from __future__ import annotations

# --- single messages ------------------------------------------------------------------------

SINGLE: dict[str, list[str]] = {
    "track_order": [
        "where is my order {order}",
        "Where's my package? I ordered it {days} days ago",
        "any update on order {order}?",
        "Can you tell me when my {product} will arrive?",
        "I haven't received my order yet. It was supposed to come on {date}.",
        "tracking number for {order} pls",
        "The tracking page for {order} hasn't changed in {days} days, is it lost?",
        "has my order shipped yet",
        "My parcel says 'in transit' since last week. When will it actually get here?",
        "could you check the status of my purchase? order no. {order}",
        "It says delivered but there's nothing at my door. Where did the {carrier} driver leave it?",
        "how long until my {product} gets here",
        "Hi, I'd like an ETA on order {order} please",
        "still waiting on my stuff, whats going on with {order}",
        "Is my order out for delivery today?",
        "The {carrier} link you sent me doesn't work. How can I follow my shipment?",
        "i order {product} one week before and still not come, please tell me where is it",
        "Please advise the delivery status of my order {order}, I need it before {date}.",
        "wheres my order at",
        "did u guys even send my {product}??",
        "I'm not trying to cancel or anything, I just want to know where my package is right now.",
        "Not asking for a refund, just need to know when order {order} will arrive.",
        "My order was meant to arrive yesterday and the tracking still shows 'label created'.",
        "Has the {product} left your warehouse yet?",
        "I need to know if my order will make it by {date}, it's a birthday gift",
        "Can I get the tracking info for the {product} I bought?",
        "Order {order} - expected delivery date?",
        "Good morning, kindly let me know when my shipment will be dispatched.",
        "i paid for express shipping and still no tracking number, where is it",
        "Which courier is delivering order {order} and when?",
        "the package is stuck at the {carrier} depot in {city}, any idea when it moves",
        "when will u ship it",
        "Could you find out what happened to my delivery? It never showed up.",
        "Half my order came but the {product} is missing, is it coming separately?",
        "I got an email saying my order shipped but no tracking number was included.",
        "hello, my order {order} status still 'processing' since {days} days, when it will be send?",
        "Is there a way to see where my parcel is? I'm going to be away this weekend.",
        "check order {order}",
        "Order status?",
        "still not delivered",
    ],
    "cancel_order": [
        "I want to cancel my order {order}",
        "please cancel order {order}",
        "Can I cancel the {product} I just ordered?",
        "I ordered the wrong size by mistake, please cancel the whole order before it ships.",
        "cancel my order pls",
        "I changed my mind about the {product}, can you stop the order?",
        "How do I cancel an order I placed an hour ago?",
        "I accidentally ordered two of the {product}. Please cancel one of them.",
        "Is it too late to cancel order {order}?",
        "dont send it, i want to cancel",
        "Hi, I'd like to cancel my purchase. I found it cheaper somewhere else.",
        "Please void order {order}, I no longer need it.",
        "Don't bother tracking it, just cancel order {order}.",
        "I was going to return it when it arrives, but I'd rather cancel now before you ship it.",
        "The delivery date is too late for me, so please cancel order {order}.",
        "i want cancel the order i make yesterday, is possible?",
        "Can you cancel the {product} and keep the rest of the order?",
        "Kindly cancel my order {order} and confirm by email.",
        "I need to cancel an order that hasn't shipped yet.",
        "stop my order!!! ordered by mistake",
        "There's a cancel button in the app but it's greyed out. I want to cancel order {order}.",
        "Please cancel it, my husband already bought the same {product}.",
        "I placed a duplicate order by accident, cancel the second one please",
        "I'd like to withdraw my order for the {product}.",
        "cancel {order}",
        "Can I still cancel? It says 'preparing for shipment'.",
        "Not interested anymore, please cancel everything I ordered today.",
        "How can I cancel my pre-order of the {product}?",
        "I don't want a refund later, I want the order cancelled now before it's charged.",
        "Please scrap order {order}.",
        "hey can u cancel my last order, wrong color",
        "I want to call off my order, the {product} won't arrive in time for the trip anyway.",
        "Please don't ship order {order}. I want to cancel it.",
        "Dear team, due to a change in plans I must cancel order {order}. Thank you.",
        "I no longer want the items in my basket that I paid for this morning. Cancel please.",
    ],
    "return_item": [
        "How do I return the {product}?",
        "I want to return my order {order}",
        "The {product} doesn't fit, can I exchange it for a {size}?",
        "Can you send me a return label?",
        "I'd like to send back the {product}, it's not what I expected.",
        "what is the return process",
        "I received the wrong item. I ordered a {color} {product} and got a different one. How do I send it back?",
        "Can I swap the {product} for a different color?",
        "The {product} arrived broken. I'd like a replacement please.",
        "I don't need my money back, I just want to exchange the {product} for a bigger size.",
        "Where do I drop off my return?",
        "Is it too late to return something I bought {days} days ago?",
        "i want give back the {product}, it is too small for me",
        "need to return a gift, no receipt",
        "How many days do I have to return the {product}?",
        "Please arrange a pickup for the {product} I want to return.",
        "my {product} stopped working after a week, can i get a replacement",
        "I'd like to exchange order {order} for the next size up.",
        "Hi! Can I return just one item from order {order}?",
        "The return label in the box is for the wrong address, what should I do to return this?",
        "wanna send this back, how",
        "Do I have to pay for return shipping on the {product}?",
        "Can I bring the {product} back to a store instead of mailing it?",
        "I want to return the {product} and order a different model instead.",
        "The colour looks nothing like the photos. I'd like to return it.",
        "How do I start a return for the {product}? The app doesn't show the option.",
        "Could you replace the defective {product} with a new one?",
        "I got two {product}s but only ordered one, how do I send the extra back?",
        "Not a complaint really, the {product} just doesn't suit me, so I'd like to return it.",
        "Please send a replacement, the {product} came with a missing part.",
        "I'd like to exchange the {product} instead of getting a refund.",
        "return request for order {order}",
        "exchange pls, wrong size",
        "I have the box packed and ready, where do I ship it back to?",
        "Can I return opened items? The {product} is not for me.",
    ],
    "refund_request": [
        "I want a refund for order {order}",
        "Can I get my money back for the {product}?",
        "I returned the {product} two weeks ago and still haven't received my refund.",
        "Please refund me, the {product} never arrived.",
        "When will I get my refund of {amount}?",
        "I'd like a full refund, the item was damaged.",
        "refund pls",
        "No need for a replacement, I just want my money back.",
        "I cancelled order {order} but I still haven't been refunded.",
        "You charged me for shipping on a free shipping order, please refund the {amount}.",
        "i want my money back",
        "The refund you promised hasn't shown up on my card yet.",
        "Could you refund the difference? The {product} went on sale a day after I bought it.",
        "please give me refund for the broken {product}, i dont want another one",
        "Where is my refund??? It's been {days} days",
        "I was told I'd get a refund within 5 business days. It's been {days}.",
        "Can you refund me to my {method} instead of store credit?",
        "Dear Customer Service, I am writing to request a refund of {amount} for order {order}, which arrived damaged.",
        "Requesting reimbursement for the late delivery fee.",
        "The package was lost, so I'd like my money back rather than a new one.",
        "I kept the receipt. How do I get reimbursed for the {product}?",
        "Is my refund processed yet? Order {order}.",
        "Only half the order arrived, I want a partial refund for the missing {product}.",
        "Refund the {product} please, I already sent it back.",
        "I don't want to exchange it, just refund it.",
        "money back for order {order} please",
        "Can you check the status of my refund?",
        "I got charged after cancelling, I need that {amount} back.",
        "you owe me {amount}, refund it",
        "My refund went to an old card that's closed. How do I get the money?",
        "How long does a refund take to reach my {method}?",
        "I'd like compensation for the {product} that arrived a week late, a refund of the shipping cost would be fair.",
        "sir i am requesting you kindly refund my amount for the order {order}",
        "The item was not as described. I want a refund, not a replacement.",
        "Refund status?",
    ],
    "product_inquiry": [
        "Does the {product} come in {color}?",
        "Is the {product} in stock?",
        "What's the difference between the {product} and the newer model?",
        "When will the {product} be back in stock?",
        "Is the {product} waterproof?",
        "what material is the {product} made of",
        "Do you have the {product} in size {size}?",
        "Is the {product} compatible with an iPhone 15?",
        "How big is the {product}? I need the exact dimensions.",
        "does this come with a warranty",
        "Can you recommend a {product} for a beginner?",
        "Is the {product} suitable for sensitive skin?",
        "How long does the battery last on the {product}?",
        "Not a complaint, just a question: is the {product} dishwasher safe?",
        "is the {product} vegan",
        "Before I order, does the {product} include the charger?",
        "what size should i get, im usually a {size}",
        "Does the {product} run small?",
        "Are your {product}s made in Europe?",
        "Hi there, I'm looking for a gift. Would the {product} work for a 10 year old?",
        "hi do u have {product} in other colors",
        "Is the price of the {product} going down for Black Friday?",
        "Can the {product} be used outdoors?",
        "What's the weight of the {product}?",
        "Is there a bundle with the {product} and accessories?",
        "Do you sell replacement parts for the {product}?",
        "how do i know if the {product} will fit my {product2}",
        "Is the {product} good for travel?",
        "Does the {product} need assembly?",
        "I'm thinking about buying the {product}, how loud is it?",
        "Hello, could you tell me if the {product} is available in {color} and what sizes you have?",
        "does the {product} work with 110v? I'm in the US",
        "Are the {product} reviews on your site verified?",
        "what is the capacity of the {product}",
        "i want know if this {product} is original or copy",
        "Do you restock the {color} {product} soon? It's been sold out for weeks.",
        "Which {product} would you recommend under {amount}?",
    ],
    "change_address": [
        "I need to change the shipping address on order {order}",
        "Can I update my delivery address? I'm moving next week.",
        "I entered the wrong address, it should be {address}.",
        "please send my order to {address} instead",
        "Can you deliver the {product} to my office instead of my home?",
        "wrong postcode on my order, can u fix it",
        "Don't cancel it, I just need it delivered to {address} instead.",
        "I forgot to add my apartment number to the address for order {order}.",
        "Is it possible to change where my package is going? It hasn't shipped yet.",
        "my address is wrong on the order!! please change to {address}",
        "Hi, I moved to {city}. Can you redirect my order there?",
        "update shipping address",
        "Please change the delivery address for {order} to my parents' place: {address}.",
        "The street name is misspelled on my order, can you correct it?",
        "i need to change adress of delivery, i write it wrong",
        "Could you ship order {order} to a pickup point instead of my house?",
        "How do I edit the address on an order I already placed?",
        "I'd like my order to go to {address}, not the billing address.",
        "Can I change the address while the parcel is already with {carrier}?",
        "I'm not home that week, can the order be sent to my work address instead?",
        "The address autocomplete picked the wrong town. It should be {city}.",
        "Change delivery address to {address} please, order {order}",
        "I made a typo in my house number, it's 42 not 24.",
        "My default address is outdated, I need to update it before my next order ships.",
        "Please reroute my package to {address}.",
        "Could the courier leave it at my neighbour's address instead? It's {address}.",
        "new address for order {order}: {address}",
        "I gave you my old address by mistake, can you change it before it ships?",
        "Can my order be shipped to a different city? I'll be in {city} that week.",
        "Hello! Is it possible to modify the delivery address on my order? I put the wrong zip code.",
    ],
    "payment_issue": [
        "My card was declined but I have enough money",
        "I was charged twice for order {order}",
        "The payment keeps failing at checkout",
        "I can't pay with {method}, it gives an error",
        "My payment went through but the order says unpaid.",
        "Why was my card charged {amount} when the total was less?",
        "I don't want a refund, I want to know why my card was declined.",
        "There's a charge on my statement I don't recognize from your store.",
        "checkout wont accept my card",
        "The verification code for my card payment never arrives, so I can't finish paying.",
        "I was billed for an order I never placed.",
        "Money was taken from my account but the order didn't go through.",
        "Your site says 'payment error' every time I try to buy the {product}.",
        "i try pay with {method} but it say transaction failed, what to do",
        "The billing address doesn't match error won't go away.",
        "Why is there a pending charge of {amount} on my card?",
        "I got charged the full price instead of the sale price for the {product}.",
        "My {method} payment has been 'processing' for {days} days.",
        "payment not going thru",
        "Hi, I'm trying to place an order but my payment gets rejected every time.",
        "you took money from my card twice!!",
        "The installment plan charged me the whole amount at once.",
        "I can't update my card details, the payment page just reloads.",
        "The order total jumped by {amount} at the payment step.",
        "My bank says the transaction was blocked by your payment provider.",
        "Is there a problem with your payment system? Three cards failed.",
        "Dear support, my payment for order {order} was debited but I received an error message and no confirmation.",
        "i was double charged",
        "Apple Pay isn't working on your site.",
        "Please help, I paid with {method} and the order is still awaiting payment.",
        "My gift card balance was deducted but the order failed.",
        "Why was I charged a currency conversion fee?",
    ],
    "complaint": [
        "This is the worst customer service I have ever experienced.",
        "I'm very disappointed with the quality of the {product}.",
        "Your delivery driver was extremely rude to me.",
        "I've been on hold for an hour, this is ridiculous.",
        "The {product} fell apart after one use. Terrible quality.",
        "I want to file a complaint about your agent {agent}.",
        "Your website is a mess and impossible to use.",
        "I don't even want a refund at this point, I just want you to know how bad this was.",
        "Every order I place with you arrives late. I'm sick of it.",
        "i am very unhappy with ur service",
        "The packaging was soaked and the box was crushed. Really poor handling.",
        "Nobody ever answers my emails. Awful.",
        "How do I make a formal complaint?",
        "The product looks nothing like the pictures. Misleading advertising.",
        "I was promised a callback three times and nobody called.",
        "this company is a joke",
        "Your return policy is unfair and your staff were unhelpful.",
        "I'm writing to express my frustration with how my last three orders were handled.",
        "The quality of your products has really gone downhill.",
        "Your courier threw my parcel over the fence.",
        "Very bad experience, i will never buy from you again",
        "The agent hung up on me in the middle of the conversation.",
        "It's unacceptable that I had to contact you five times about the same issue.",
        "The {product} smells awful and the stitching is coming off.",
        "worst store ever",
        "I want to speak to a manager about how I was treated.",
        "The delivery came at 11pm and the driver was shouting. Not okay.",
        "Your chatbot is useless and keeps sending me in circles.",
        "I'm disgusted by the state the {product} arrived in.",
        "Dear Sir or Madam, I wish to lodge a complaint regarding the service I received in your {city} store.",
        "I'm not happy at all. Your prices went up and the quality went down.",
        "your app crashes every time, fix it, so annoying",
        "the staff at the store were so rude to me today",
    ],
    "compliment": [
        "Thank you so much, your service was excellent!",
        "I love the {product}, it's perfect!",
        "{agent} was super helpful, please pass on my thanks.",
        "Fast delivery and great quality, very happy.",
        "Best online shopping experience I've had.",
        "just wanted to say thanks, the {product} is amazing",
        "Your customer service team is fantastic.",
        "I was going to complain but your agent fixed everything in minutes. Thank you!",
        "The packaging was beautiful, great attention to detail.",
        "Wow, the {product} arrived a day early. Impressed!",
        "i will definitely recommend your store to my friends",
        "Great job, keep it up!",
        "The {product} exceeded my expectations.",
        "thx a lot, u guys are the best",
        "Thank you for resolving my issue so quickly.",
        "I just wanted to let you know that {agent} went above and beyond today.",
        "My daughter loves the {product} you sent, thank you!",
        "Really smooth return process, kudos to your team.",
        "Five stars, great service as always.",
        "Very nice quality, i am very satisfied with my buy",
        "Your new website is so much easier to use, well done.",
        "I appreciate how patient your support staff were with me.",
        "Dear team, I wanted to write and thank you for the wonderful service. The {product} is lovely and arrived quickly.",
        "love love love it",
        "The refund came through quickly, thanks a lot for the great service!",
        "The delivery guy was really friendly and careful with the package.",
        "Honestly the best support chat I've ever used.",
        "Everything was perfect, thank you!",
        "Top notch service, I'm a customer for life.",
        "thanks for the fast reply, very professional",
    ],
    "other": [
        "How do I reset my password?",
        "I want to unsubscribe from your newsletter.",
        "Where can I download the invoice for order {order}?",
        "Can I speak to a human please?",
        "What are your store opening hours?",
        "How do I delete my account?",
        "Do you have any job openings?",
        "hello",
        "ok thanks bye",
        "I can't log in to my account.",
        "How do I change the email on my account?",
        "Do you have a physical store in {city}?",
        "Please cancel my newsletter subscription, I get too many emails.",
        "How do I join the loyalty program?",
        "What's your phone number?",
        "Can I get a VAT invoice for my company?",
        "Are you open on public holidays?",
        "I'd like to create a business account.",
        "can i talk to a real person",
        "What does my loyalty points balance look like?",
        "test",
        "Do you offer student discounts?",
        "How do I update my phone number on my profile?",
        "I never received the account verification email.",
        "Can I partner with your brand as an influencer?",
        "What's the weather like today?",
        "Who is the CEO of your company?",
        "I want to stop receiving text messages from you.",
        "Is my personal data stored securely? I'd like a copy of it under GDPR.",
        "Do you sell gift cards?",
        "no that's all, thank you",
        "How can I leave a review on your website?",
        "Can I change the language of the app?",
        "I'm a supplier, who can I talk to about wholesale?",
        "hi, anyone there?",
        "my account got locked after too many login attempts",
        "What countries do you ship to?",
        "How do I merge two accounts?",
        "I need a copy of the receipt for my expense report.",
        "Can I have a word with your customer care department?",
    ],
}

# --- multi-turn scenarios -------------------------------------------------------------------
# (history turns as (role, text), final customer message). The label depends on the history
# where the final message is short ("yes", "the first one").

MULTI: dict[str, list[tuple[list[tuple[str, str]], str]]] = {
    "refund_request": [
        (
            [
                ("customer", "My {product} arrived damaged."),
                (
                    "agent",
                    "I'm sorry! I can offer you a refund or a replacement. Which would you prefer?",
                ),
            ],
            "yes, the first option",
        ),
        (
            [
                ("customer", "The {product} is broken."),
                ("agent", "Sorry about that. Would you like a replacement or your money back?"),
            ],
            "money back please",
        ),
        (
            [
                (
                    "agent",
                    "I can send a replacement or issue a refund to your {method}, what works for you?",
                ),
            ],
            "the refund",
        ),
        (
            [
                ("customer", "I sent the {product} back last week."),
                (
                    "agent",
                    "Thanks, I can see the return arrived at our warehouse. How can I help further?",
                ),
            ],
            "when do I get the money?",
        ),
        (
            [
                ("customer", "My order {order} never arrived."),
                ("agent", "I'm sorry. Would you like us to reship it or refund you?"),
            ],
            "just give me my money back",
        ),
        (
            [
                ("agent", "Your order {order} was cancelled as requested."),
            ],
            "ok and when will the {amount} be back on my card?",
        ),
        (
            [
                ("customer", "I was charged for shipping but it was supposed to be free."),
                ("agent", "You're right, that's our mistake. Shall I refund the shipping fee?"),
            ],
            "yes please do",
        ),
        (
            [
                (
                    "agent",
                    "Option 1: full refund. Option 2: a replacement shipped today. Option 3: store credit.",
                ),
            ],
            "1",
        ),
    ],
    "return_item": [
        (
            [
                ("customer", "My {product} arrived damaged."),
                (
                    "agent",
                    "I'm sorry! I can offer you a refund or a replacement. Which would you prefer?",
                ),
            ],
            "the second one, a replacement please",
        ),
        (
            [
                ("agent", "Would you like a refund, or should we exchange it for another size?"),
            ],
            "exchange it",
        ),
        (
            [
                ("customer", "The {product} is too small."),
                ("agent", "No problem. Do you want to return it or keep it?"),
            ],
            "return it",
        ),
        (
            [
                (
                    "agent",
                    "Option 1: full refund. Option 2: a replacement shipped today. Option 3: store credit.",
                ),
            ],
            "2 please",
        ),
        (
            [
                ("customer", "I got the wrong {product}."),
                ("agent", "Apologies. I've emailed you a prepaid label."),
            ],
            "where do I drop the box off?",
        ),
        (
            [
                ("agent", "Your order {order} was delivered on {date}. Anything wrong with it?"),
            ],
            "yes, it doesn't fit, I want to send it back",
        ),
        (
            [
                ("customer", "Hi, about order {order}"),
                ("agent", "Sure, what can I do for you?"),
            ],
            "I need to swap the {product} for a {size}",
        ),
        (
            [
                ("agent", "I can send you a new one or refund you. Which do you prefer?"),
            ],
            "send a new one",
        ),
    ],
    "track_order": [
        (
            [
                ("customer", "Hi, I ordered a {product} last week."),
                ("agent", "Thanks! What can I help you with regarding that order?"),
            ],
            "it still hasn't arrived, where is it?",
        ),
        (
            [
                ("agent", "Hello! How can I help you today?"),
                ("customer", "it's about order {order}"),
                ("agent", "Of course. What would you like to know?"),
            ],
            "when will it get here",
        ),
        (
            [
                ("agent", "Would you like me to check the delivery status or cancel the order?"),
            ],
            "the first one",
        ),
        (
            [
                ("customer", "I want to cancel order {order}."),
                (
                    "agent",
                    "It has already shipped, so I can't cancel it. You can return it once it arrives.",
                ),
            ],
            "ok then can you at least tell me when it arrives",
        ),
        (
            [
                ("agent", "Your order {order} was handed to {carrier} yesterday."),
            ],
            "do you have the tracking number?",
        ),
        (
            [
                ("customer", "Still nothing."),
                ("agent", "Could you give me your order number?"),
            ],
            "{order}, it was supposed to come {date}",
        ),
        (
            [
                ("agent", "Is there anything else I can help with?"),
            ],
            "yes actually, has my other order shipped yet?",
        ),
        (
            [
                ("agent", "Shall I check where your parcel is?"),
            ],
            "yes please",
        ),
    ],
    "cancel_order": [
        (
            [
                ("customer", "I just placed order {order}."),
                ("agent", "Thanks for your order! It's being prepared. Anything I can help with?"),
            ],
            "yes I want to cancel it",
        ),
        (
            [
                ("agent", "Your order hasn't shipped yet. Do you want to cancel it or keep it?"),
            ],
            "cancel",
        ),
        (
            [
                ("agent", "Would you like me to cancel the order or change the delivery date?"),
            ],
            "the first option please",
        ),
        (
            [
                ("customer", "Where is my order {order}?"),
                ("agent", "It's still in our warehouse, it will ship in {days} days."),
            ],
            "that's too late, just cancel it",
        ),
        (
            [
                ("agent", "Hi, how can I help?"),
                ("customer", "I ordered the {product} twice by mistake"),
                ("agent", "I see two identical orders on your account."),
            ],
            "please get rid of the second one",
        ),
        (
            [
                ("agent", "Shall I go ahead and cancel order {order} for you?"),
            ],
            "yes do it",
        ),
        (
            [
                ("customer", "I want to change the address on my order."),
                ("agent", "Unfortunately the address can't be changed anymore."),
            ],
            "then I don't want it, cancel the order",
        ),
        (
            [
                ("agent", "Your pre-order of the {product} will ship on {date}."),
            ],
            "I can't wait that long, please cancel",
        ),
    ],
    "change_address": [
        (
            [
                ("agent", "Your order will be shipped to {address}. Is that correct?"),
            ],
            "no, I moved, please send it to {address2}",
        ),
        (
            [
                ("customer", "Hi, about my order {order}"),
                ("agent", "Sure, how can I help?"),
            ],
            "the address is wrong, the flat number is missing",
        ),
        (
            [
                ("agent", "Would you like to change the delivery address or the delivery date?"),
            ],
            "the address",
        ),
        (
            [
                ("customer", "I'm not going to be home next week."),
                ("agent", "No problem, what would you like to do?"),
            ],
            "can you send it to my office instead",
        ),
        (
            [
                ("agent", "Shall I update the shipping address to {address}?"),
            ],
            "yes please",
        ),
        (
            [
                ("customer", "I want to cancel my order."),
                ("agent", "May I ask why?"),
            ],
            "it's going to my old address. actually if you can just change the address to {address} I'll keep it",
        ),
        (
            [
                ("agent", "Your parcel is with {carrier} and will arrive {date}."),
            ],
            "can it go to {city} instead? I'm away",
        ),
    ],
    "payment_issue": [
        (
            [
                ("agent", "Hello, what seems to be the problem?"),
            ],
            "it keeps saying card declined",
        ),
        (
            [
                ("customer", "I tried to order the {product}."),
                ("agent", "Great, did everything go OK?"),
            ],
            "no, the payment failed but the money left my account",
        ),
        (
            [
                ("agent", "I can see order {order} on your account. What's wrong with it?"),
            ],
            "I was charged twice for it",
        ),
        (
            [
                ("agent", "Is the issue with the delivery or with the payment?"),
            ],
            "the second one",
        ),
        (
            [
                ("customer", "I can't finish my order."),
                ("agent", "Which step are you stuck at?"),
            ],
            "at checkout, {method} just shows an error",
        ),
        (
            [
                ("agent", "Anything else I can help with today?"),
            ],
            "yes, there's a charge of {amount} on my card I don't recognise",
        ),
        (
            [
                ("customer", "I placed an order yesterday."),
                ("agent", "I see it, it's marked as awaiting payment."),
            ],
            "but I already paid! the money is gone from my bank",
        ),
    ],
    "product_inquiry": [
        (
            [
                ("agent", "Is there anything else I can help you with?"),
            ],
            "yes, does the {product} come in {color}?",
        ),
        (
            [
                ("customer", "I'm looking at the {product}."),
                ("agent", "Great choice! Any questions about it?"),
            ],
            "is it waterproof?",
        ),
        (
            [
                ("customer", "I want to buy a {product} for my son."),
                ("agent", "Happy to help. What would you like to know?"),
            ],
            "which size would fit a 12 year old",
        ),
        (
            [
                ("agent", "The {product} is currently out of stock."),
            ],
            "when will you have it again?",
        ),
        (
            [
                ("customer", "Before I order"),
                ("agent", "Sure, go ahead"),
            ],
            "does it need batteries or does it plug in",
        ),
        (
            [
                ("agent", "We have the {product} in two versions, standard and pro."),
            ],
            "what's the difference?",
        ),
        (
            [
                ("customer", "My last order was great."),
                ("agent", "Glad to hear it! Can I help with anything else?"),
            ],
            "do you sell a matching case for the {product}?",
        ),
    ],
    "complaint": [
        (
            [
                ("customer", "Where is my order {order}?"),
                ("agent", "It's delayed, it should arrive in {days} days."),
            ],
            "this is unacceptable, third time this happens. your service is awful",
        ),
        (
            [
                ("agent", "Thanks for waiting. How can I help?"),
            ],
            "I waited 45 minutes to get an answer, that's terrible service",
        ),
        (
            [
                ("customer", "I returned the item."),
                ("agent", "Your refund has now been processed."),
            ],
            "fine, but the way your staff treated me in the store was disgraceful",
        ),
        (
            [
                ("agent", "Would you like to share any feedback about your experience?"),
            ],
            "honestly it was awful, the {product} broke and nobody cared",
        ),
        (
            [
                ("agent", "I'm afraid there's nothing more I can do."),
            ],
            "that's pathetic. I want to make a formal complaint",
        ),
        (
            [
                ("customer", "I ordered the {product} for a birthday."),
                ("agent", "I see it arrived {days} days late, sorry about that."),
            ],
            "sorry doesn't cut it, you ruined the whole party",
        ),
        (
            [
                ("agent", "Was there an issue with your delivery?"),
            ],
            "yes, the driver was rude and threw the box at my door",
        ),
    ],
    "compliment": [
        (
            [
                ("agent", "Your refund has been processed, you'll see it in 2 days."),
            ],
            "you were amazing, thank you so much!",
        ),
        (
            [
                ("agent", "Glad I could help! Anything else?"),
            ],
            "no, just wanted to say you did a great job",
        ),
        (
            [
                ("customer", "I got my {product} today."),
                ("agent", "Great! How do you like it?"),
            ],
            "it's perfect, exactly what I wanted",
        ),
        (
            [
                ("agent", "I've sent a replacement, it will arrive tomorrow."),
            ],
            "wow that's fast, excellent service",
        ),
        (
            [
                ("agent", "How would you rate your experience today?"),
            ],
            "10/10, really friendly and quick",
        ),
        (
            [
                ("customer", "the package arrived"),
                ("agent", "Wonderful, is everything in order?"),
            ],
            "yes all good, lovely packaging too. thanks {agent}!",
        ),
    ],
    "other": [
        (
            [
                ("agent", "Is there anything else I can help with?"),
            ],
            "no that's all, bye",
        ),
        (
            [
                ("agent", "Your order {order} has been delivered."),
            ],
            "ok thanks. also how do I reset my password?",
        ),
        (
            [
                ("customer", "I want to cancel."),
                ("agent", "Do you mean an order, or your newsletter subscription?"),
            ],
            "the newsletter",
        ),
        (
            [
                ("agent", "Would you like a copy of the invoice or to cancel the order?"),
            ],
            "the invoice please",
        ),
        (
            [
                ("agent", "Hello! How can I help you today?"),
            ],
            "hi",
        ),
        (
            [
                ("agent", "I can help with orders, returns and payments."),
            ],
            "I just want to talk to a person",
        ),
        (
            [
                ("agent", "Thanks for contacting us. Do you have an order number?"),
            ],
            "no, it's about my account, I can't log in",
        ),
        (
            [
                ("agent", "Is there anything else I can help with?"),
            ],
            "nope",
        ),
    ],
}

# --- wrappers and slot values ---------------------------------------------------------------

GREETINGS = [
    "Hi,",
    "Hello,",
    "Hey",
    "hi there",
    "Good morning,",
    "Good afternoon,",
    "Dear Sir/Madam,",
    "Dear customer service,",
    "Hello team,",
    "yo",
    "Hiya,",
    "Hi support,",
    "Greetings,",
]
EMAIL_CONTEXT = [
    "I placed an order with you on {date}.",
    "I have been a customer of yours for several years.",
    "I'm writing about order {order}.",
    "I bought a {product} from your website recently.",
    "My name is {name} and I ordered from your online shop last month.",
    "I hope this message finds you well.",
    "I tried to reach you by phone but couldn't get through.",
    "This concerns my recent purchase.",
]
CLOSINGS = [
    "Thanks",
    "Thank you",
    "thx",
    "Thanks in advance.",
    "Kind regards, {name}",
    "Best, {name}",
    "Regards",
    "Cheers",
    "pls help",
    "Looking forward to your reply.",
    "Many thanks, {name}",
    "asap please",
    "Sent from my iPhone",
    "Thank you for your help.",
]
MOODS_ANGRY = [
    "I'm getting really frustrated.",
    "This is the second time I'm writing.",
    "Seriously?!",
    "Not happy.",
    "Come on.",
    "I need an answer today.",
]
MOODS_POLITE = [
    "Sorry to bother you.",
    "I hope you can help.",
    "Thank you for your patience.",
    "Could you please help me with this?",
]

VALUES: dict[str, list[str]] = {
    "product": [
        "blue running shoes",
        "wireless headphones",
        "coffee maker",
        "yoga mat",
        "winter jacket",
        "phone case",
        "desk lamp",
        "air fryer",
        "leather wallet",
        "kids' bike helmet",
        "bluetooth speaker",
        "office chair",
        "face cream",
        "board game",
        "cotton bedsheets",
        "smart watch",
        "hiking backpack",
        "vacuum cleaner",
        "silk scarf",
        "gaming mouse",
        "dining table",
        "baby stroller",
        "sunglasses",
        "electric toothbrush",
        "denim jeans",
        "cookware set",
        "robot vacuum",
        "sofa cushion covers",
        "dog bed",
        "perfume",
        "e-reader",
        "mechanical keyboard",
        "rain boots",
        "wool sweater",
        "blender",
        "camping tent",
        "standing desk",
        "hair dryer",
        "laptop sleeve",
        "wall clock",
    ],
    "color": ["black", "navy", "red", "white", "green", "beige", "pink", "grey", "olive"],
    "size": ["small", "medium", "large", "XL", "size 38", "size 10", "M", "42"],
    "carrier": ["UPS", "DHL", "FedEx", "USPS", "Royal Mail", "DPD", "Hermes", "PostNL", "GLS"],
    "method": ["PayPal", "Visa", "my Mastercard", "Klarna", "Apple Pay", "my debit card", "Amex"],
    "city": ["Leeds", "Austin", "Toronto", "Lyon", "Dublin", "Melbourne", "Madrid", "Denver"],
    "name": ["Maria", "James", "Aisha", "Tom", "Priya", "Lukas", "Chen", "Sofia", "Omar"],
    "agent": ["Sarah", "Mike", "Anna", "David", "Fatima", "the agent on the phone"],
    "address": [
        "12 Elm Street, Springfield",
        "Flat 3, 48 Queen's Road",
        "221B Baker St",
        "742 Evergreen Terrace",
        "15 Rue de la Paix, Lyon",
        "88 Harbour Lane, apt 5",
        "Calle Mayor 10, Madrid",
        "1600 Pine Ave, Denver CO 80203",
    ],
}
