/**
 * A tiny NestJS application on @ssut/nestjs-sqs (which runs sqs-consumer and sqs-producer on
 * @aws-sdk/client-sqs, so the JSON 1.0 protocol): a module, a producer service that sends through
 * SqsService, and a handler method the module's consumer calls for each message.
 *
 * Nest's decorators are the legacy (experimentalDecorators) kind, which this project's tsconfig does
 * not enable; they are applied here by calling them, which is what the `@` syntax compiles to.
 * The module and its SqsModule.register options are as an application would write them.
 */
import 'reflect-metadata';
import { SQSClient, type Message } from '@aws-sdk/client-sqs';
import { Module, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SqsMessageHandler, SqsModule, SqsService } from '@ssut/nestjs-sqs';

export const QUEUE = 'greetings';

/** Sends through the module's producer named QUEUE. */
export class GreetingProducer {
  constructor(private readonly sqs: SqsService) {}

  async greet(id: string, text: string): Promise<void> {
    await this.sqs.send(QUEUE, {
      id,
      body: text,
      messageAttributes: { lang: { DataType: 'String', StringValue: 'en' } },
    });
  }
}

/** The consumer's handler: hands every message to `seen`. */
export class GreetingHandler {
  static seen: (message: Message) => void = () => {};

  handle(message: Message): Promise<void> {
    GreetingHandler.seen(message);
    return Promise.resolve();
  }
}
SqsMessageHandler(QUEUE, false)(
  GreetingHandler.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(GreetingHandler.prototype, 'handle') as PropertyDescriptor,
);

/** The application module for a server at `endpoint` and a queue at `queueUrl`. */
export function appModule(endpoint: string, queueUrl: string): Type<unknown> {
  // docs/clients.md quotes this block.
  // --- module ---
  const sqs = new SQSClient({
    endpoint, // e.g. http://127.0.0.1:4100
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  const sqsModule = SqsModule.register({
    consumers: [{ name: QUEUE, queueUrl, sqs, waitTimeSeconds: 1, messageAttributeNames: ['All'] }],
    producers: [{ name: QUEUE, queueUrl, sqs }],
  });
  // --- end module ---
  class AppModule {}
  Module({
    imports: [sqsModule],
    providers: [
      GreetingHandler,
      {
        provide: GreetingProducer,
        useFactory: (s: SqsService) => new GreetingProducer(s),
        inject: [SqsService],
      },
    ],
  })(AppModule);
  return AppModule;
}

/** Starts the application (its consumers start polling); `close()` stops them. */
export function startApp(endpoint: string, queueUrl: string): Promise<INestApplicationContext> {
  return NestFactory.createApplicationContext(appModule(endpoint, queueUrl), { logger: false });
}
