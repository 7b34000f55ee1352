<?php
// Symfony Messenger 5.4's Amazon SQS transport (Debian's php-symfony-amazon-sqs-messenger, on
// AsyncAws SQS from php-async-aws-sqs, which speaks the Query protocol) against shared-sqs: a
// message is dispatched through a bus routed to the SQS transport, then a Worker consumes it and
// runs its handler. Prints one JSON line: what the handler saw.
//
// Usage: SHARED_SQS_HOST_PORT=127.0.0.1:PORT php symfony-messenger.php QUEUE_NAME TEXT

require_once '/usr/share/php/Symfony/Component/Messenger/autoload.php';
require_once '/usr/share/php/Symfony/Component/Messenger/Bridge/AmazonSqs/autoload.php';
require_once '/usr/share/php/Psr/Container/autoload.php';

use Psr\Container\ContainerInterface;
use Symfony\Component\Messenger\Bridge\AmazonSqs\Transport\AmazonSqsTransportFactory;
use Symfony\Component\Messenger\Handler\HandlersLocator;
use Symfony\Component\Messenger\MessageBus;
use Symfony\Component\Messenger\Middleware\HandleMessageMiddleware;
use Symfony\Component\Messenger\Middleware\SendMessageMiddleware;
use Symfony\Component\Messenger\Transport\Sender\SendersLocator;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;
use Symfony\Component\Messenger\Worker;
use Symfony\Contracts\Service\ServiceLocatorTrait;

final class Greeting
{
    public function __construct(public string $text)
    {
    }
}

[, $queueName, $text] = $argv;

// docs/clients.md quotes this block.
// --- dsn ---
// sqs://ACCESS_KEY:SECRET_KEY@HOST:PORT/QUEUE; sslmode=disable makes the endpoint http://.
$dsn = sprintf(
    'sqs://test:test@%s/%s?sslmode=disable&region=us-east-1&wait_time=1',
    getenv('SHARED_SQS_HOST_PORT'),
    $queueName,
);
// --- end dsn ---
$transport = (new AmazonSqsTransportFactory())->createTransport($dsn, [], new PhpSerializer());

$senders = new class(['sqs' => fn () => $transport]) implements ContainerInterface {
    use ServiceLocatorTrait;
};
$handled = [];
$worker = null;
$bus = new MessageBus([
    new SendMessageMiddleware(new SendersLocator([Greeting::class => ['sqs']], $senders)),
    new HandleMessageMiddleware(new HandlersLocator([
        Greeting::class => [function (Greeting $greeting) use (&$handled, &$worker) {
            $handled[] = $greeting->text;
            $worker->stop();
        }],
    ])),
]);

$bus->dispatch(new Greeting($text));

$worker = new Worker(['sqs' => $transport], $bus);
$worker->run(['sleep' => 10000]);

echo json_encode(['handled' => $handled, 'left' => $transport->getMessageCount()]), "\n";
